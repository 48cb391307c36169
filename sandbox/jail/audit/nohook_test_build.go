//go:build visnohook

package audit

import (
	"fmt"
	"os"
)

// NoHookEnv, set to 1, makes the test-only binary (built with the
// visnohook tag: `make nohook`, bin/vis-agent-nohook) skip the C audit
// hook, so that the escape corpus can show the kernel layer holds on its
// own. No release build has this file.
const NoHookEnv = "VIS_TEST_NO_AUDIT_HOOK"

func hookSkipped() bool {
	if os.Getenv(NoHookEnv) != "1" {
		return false
	}
	fmt.Fprintf(os.Stderr, "vis-agent: test build: the audit hook is not installed (%s=1)\n", NoHookEnv)
	return true
}
