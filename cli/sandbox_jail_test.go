package cli

import (
	"reflect"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestJailFlagsReachConnect: every jail flag run takes is passed on to
// connect on the remote machine, so that --host never widens what the
// user asked (it failed for --allow-host and --deny-host, which were
// dropped: the remote session got its settings' network instead).
func TestJailFlagsReachConnect(t *testing.T) {
	var given jailFlags
	cmd := &cobra.Command{Use: "run"}
	given.add(cmd)
	n := 0
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		n++
		value := "true"
		if f.Value.Type() != "bool" {
			value = f.Name + "-value"
		}
		if err := f.Value.Set(value); err != nil {
			t.Fatalf("--%s: %v", f.Name, err)
		}
	})
	if n == 0 {
		t.Fatal("no jail flags")
	}
	var passed jailFlags
	remote := &cobra.Command{Use: "connect"}
	passed.add(remote)
	if err := remote.ParseFlags(given.args()); err != nil {
		t.Fatalf("connect refuses %q: %v", given.args(), err)
	}
	if !reflect.DeepEqual(given, passed) {
		t.Errorf("connect got %+v from %q, run had %+v", passed, given.args(), given)
	}
}
