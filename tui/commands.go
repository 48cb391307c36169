package tui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

const helpText = `Keys
  Enter         run the input when complete (as python decides), else new line;
                again on an empty line: run it as it is (the session repairs
                an unclosed bracket or string, or says where it is)
  Alt+Enter, Ctrl+J   a new line
  Tab           indent, or complete a name or attribute from the session
  Up / Down     move between lines; at the first or last, walk the history
  Ctrl+C        interrupt the running block (twice within 2 s: offer to
                restart its Python process); else clear the input
  Ctrl+D        quit on an empty input (the session keeps running)
  PgUp / PgDn   scroll the transcript (also the wheel); Ctrl+O folds outputs
  F1 this help  F2 hide or show the panel  Ctrl+L clear the transcript
  F3            the attachments tab, its list taking the keys; again: defs
  The list      ↑/↓ choose, Enter views, c comments, Esc back to the input
  Viewer        ↑/↓ PgUp/PgDn scroll, [ ] previous/next version, c comments,
                Esc closes
Commands
  /defs [pattern]  helpers and variables  /attachments  list, open the tab
  /restart      restart the Python process (its state restored);
                --fresh: start empty, the snapshot discarded;
                --drop NAME...: leave those names out of it
  /rewind [N | --back N]  the state after block N, or N blocks back
                (default: before the last block); files are not rewound
  /reset        delete the session's state  /session NAME  switch sessions
  /timeout DUR  time blocks out after DUR   /clear  clear the transcript
  /help  this help     /quit  leave (the session keeps running)`

// command runs a /command line.
func (m *Model) command(line string) tea.Cmd {
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	s := m.s.sess
	switch name {
	case "/help":
		m.tr.add(kindInfo, helpText)
	case "/quit", "/exit":
		return m.leave()
	case "/clear":
		m.tr.clear()
	case "/defs":
		return func() tea.Msg {
			text, err := s.Defs(client.DefsOptions{Pattern: arg, Limit: 100})
			return doneMsg{text: text, err: err}
		}
	case "/attachments":
		m.panel.show(tabAttachments)
		m.push(m.panel)
		return func() tea.Msg {
			list, err := listAttachments(s)
			if err != nil {
				return doneMsg{err: fmt.Errorf("attachments: %w", err)}
			}
			return doneMsg{text: attachmentTable(list)}
		}
	case "/restart":
		if m.s.running {
			m.tr.add(kindProblem, "a block is running: interrupt it first (Ctrl+C)")
			return nil
		}
		opts, done, err := restartArgs(arg)
		if err != nil {
			m.tr.add(kindProblem, err.Error())
			return nil
		}
		m.restarts++
		key := fmt.Sprintf("asked %d", m.restarts)
		return func() tea.Msg {
			if err := s.Restart(opts); err != nil && !errors.Is(err, client.ErrNotRunning) {
				return doneMsg{err: fmt.Errorf("restart: %w", err)}
			}
			return doneMsg{text: done, restart: key}
		}
	case "/rewind":
		if m.s.running {
			m.tr.add(kindProblem, "a block is running: interrupt it first (Ctrl+C)")
			return nil
		}
		to, back, err := rewindArgs(arg)
		if err != nil {
			m.tr.add(kindProblem, err.Error())
			return nil
		}
		return func() tea.Msg {
			notice, _, err := s.Rewind(to, back)
			if err != nil {
				return doneMsg{err: fmt.Errorf("rewind: %w", err)}
			}
			return doneMsg{text: strings.TrimRight(notice, "\n")}
		}
	case "/reset":
		m.confirm = "reset"
		m.s.hint = "Delete session " + s.Meta.Name + "'s snapshot, helpers and variables? y/n"
	case "/session":
		if arg == "" {
			m.tr.add(kindInfo, "This is session "+s.Meta.Name+"; /session NAME switches.")
			return nil
		}
		if m.s.running {
			m.tr.add(kindProblem, "a block is running: wait for it or interrupt it first (Ctrl+C)")
			return nil
		}
		open := m.cfg.Open
		return func() tea.Msg {
			ns, err := open(arg)
			if err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{text: "Now in session " + arg + ".", sess: ns}
		}
	case "/timeout":
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			m.tr.add(kindProblem, "give a duration such as /timeout 30s or /timeout 5m")
			return nil
		}
		m.timeout = protocol.ClampTimeout(d)
		switch {
		case m.timeout > d:
			m.tr.add(kindInfo, "Blocks now time out after "+m.timeout.String()+", the minimum ("+arg+" was raised to it).")
		case m.timeout < d:
			m.tr.add(kindInfo, "Blocks now time out after "+m.timeout.String()+", the maximum ("+arg+" was lowered to it).")
		default:
			m.tr.add(kindInfo, "Blocks now time out after "+m.timeout.String()+".")
		}
	default:
		m.tr.add(kindProblem, "unknown command "+name+"; /help lists them")
	}
	return nil
}

// rewindArgs reads /rewind's arguments: nothing (back 1), a block's
// number, or --back and a count.
func rewindArgs(arg string) (to, back int, err error) {
	words := strings.Fields(arg)
	n := func(s string) int {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return 0
		}
		return v
	}
	switch {
	case len(words) == 0:
		return 0, 1, nil
	case len(words) == 1 && n(words[0]) > 0:
		return n(words[0]), 0, nil
	case len(words) == 2 && words[0] == "--back" && n(words[1]) > 0:
		return 0, n(words[1]), nil
	}
	return 0, 0, errors.New("use /rewind, /rewind BLOCK or /rewind --back N (BLOCK and N: 1 or more)")
}

// restartArgs reads /restart's arguments: nothing, --fresh, or --drop and
// names; it returns the options and the restart's notice.
func restartArgs(arg string) (client.RestartOptions, string, error) {
	words := strings.Fields(arg)
	switch {
	case len(words) == 0:
		return client.RestartOptions{}, restartedAsked, nil
	case len(words) == 1 && words[0] == "--fresh":
		return client.RestartOptions{Fresh: true}, "[Sandbox restarted] Restarted fresh: the snapshot was discarded, and the session starts empty.", nil
	case words[0] == "--drop" && len(words) > 1:
		return client.RestartOptions{Drop: words[1:]},
			"[Sandbox restarted] Restarted without " + strings.Join(words[1:], ", ") + ": the rest of the snapshot was restored.", nil
	}
	return client.RestartOptions{}, "", errors.New("use /restart, /restart --fresh or /restart --drop NAME [NAME ...]")
}
