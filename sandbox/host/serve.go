package host

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/iostreams"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// Options are the hidden `vis-agent sandbox host` command's: the session
// folder, the first child's policy as JSON ("" for DefaultPolicy's), the
// process's streams, and DefaultPolicy, the session's policy from the
// user's settings (resolved as the clients resolve it).
type Options struct {
	Dir, Policy   string
	Streams       iostreams.Streams
	DefaultPolicy func(session.Meta, session.Folder) (protocol.Policy, error)
}

// Serve is the body of a session's host process: it reads the session and
// its policy, configures the host from the user's settings (never a
// project's: the workspace is the jailed code's to write) and the
// environment's limits, serves until the host stops, and says on its
// ready descriptor (protocol.HostReadyFD) whether it started.
func Serve(o Options) error {
	s := o.Streams
	ready := os.NewFile(protocol.HostReadyFD, "ready")
	say := func(err error) {
		if ready == nil {
			return
		}
		msg := "ok"
		if err != nil {
			msg = strings.ReplaceAll(err.Error(), "\n", " ")
		}
		fmt.Fprintln(ready, msg)
		ready.Close()
		ready = nil
	}
	f := session.Folder{Dir: o.Dir}
	m, err := f.Meta()
	if err != nil {
		say(err)
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		say(err)
		return err
	}
	// The given policy whole: decoded over the default one, a field it
	// leaves out (an allow list's hosts) would come from the settings.
	var p protocol.Policy
	if o.Policy != "" {
		err = json.Unmarshal([]byte(o.Policy), &p)
	} else {
		p, err = o.DefaultPolicy(m, f)
	}
	if err != nil {
		err = fmt.Errorf("read --policy: %w", err)
		say(err)
		return err
	}
	l := s.Layout()
	st := config.Load(l.UserConfig())
	own, inner := l.Own()
	return serve(Config{
		Policy: p, Attachments: l.Attachments(), AttachMaxBytes: int64(st.SandboxMaxAttachmentMB.Value) << 20,
		FixFiles: st.SandboxFixFiles.Value, WarmRestart: st.SandboxWarmRestart.Value,
		Journal: f.JournalFile(), JournalMaxBytes: int64(st.SandboxJournalMB.Value) << 20,
		Install: installOptions(s, f), CommandPython: commandPython(s, f), AttachQuotaBytes: int64(st.SandboxMaxAttachmentsMB.Value) << 20,
		Folder: f, Meta: m, Exe: exe, DiskBytes: int64(st.SandboxMaxDiskMB.Value) << 20,
		Logs: l.Logs(), Sessions: l.Sessions(), Own: own, OwnInner: inner, Log: s.Err, UserConfig: l.UserConfig(),
		IdleTTL:       time.Duration(envInt(s, "VIS_ENV_IDLE_TTL_MS", 300000)) * time.Millisecond,
		SaveDelay:     time.Duration(envInt(s, "VIS_ENV_SAVE_DELAY_MS", 0)) * time.Millisecond,
		AnswerTimeout: time.Duration(envInt(s, "VIS_ENV_ANSWER_TIMEOUT_MS", int64(defaultAnswerTimeout/time.Millisecond))) * time.Millisecond,
		Memory: MemoryLimits{MaxChildren: int(envInt(s, "VIS_ENV_CACHE_MAX", 8)),
			RSSBudget: envInt(s, "VIS_ENV_RSS_BUDGET_MB", 3072) << 20},
	}, say)
}

// envInt reads an integer setting, else def.
func envInt(s iostreams.Streams, name string, def int64) int64 {
	if v, err := strconv.ParseInt(strings.TrimSpace(s.Getenv(name)), 10, 64); err == nil {
		return v
	}
	return def
}
