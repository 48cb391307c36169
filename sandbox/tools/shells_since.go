package tools

import "time"

// RanSince reports whether a command of m may have run at some time since
// t: one started after t, has not ended, or ended after t. The host then
// looks for the files it may have changed.
func (m *Shells) RanSince(t time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.shells {
		if s.started.After(t) || !s.ended() {
			return true
		}
		s.mu.Lock()
		end := s.endTime
		s.mu.Unlock()
		if end.IsZero() || end.After(t) {
			return true
		}
	}
	return false
}
