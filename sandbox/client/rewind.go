package client

import "github.com/vis-agent/vis-agent/sandbox/protocol"

// Rewind brings back the session's state after an earlier block from its
// history: block to, or back blocks before the current state's (neither:
// 1). A stopped session is started for it. It returns the "[Sandbox
// rewound]" notice and where the rewind went.
func (s *Session) Rewind(to, back int) (string, protocol.History, error) {
	ev, err := s.call(protocol.Request{Op: protocol.OpRewind, To: to, Back: back, Client: s.client()}, true, nil)
	if err != nil {
		return "", protocol.History{}, err
	}
	var h protocol.History
	if ev.History != nil {
		h = *ev.History
	}
	return ev.Message, h, nil
}
