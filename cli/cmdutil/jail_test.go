package cmdutil

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
	var given JailFlags
	cmd := &cobra.Command{Use: "run"}
	given.Add(cmd)
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
	var passed JailFlags
	remote := &cobra.Command{Use: "connect"}
	passed.Add(remote)
	if err := remote.ParseFlags(given.Args()); err != nil {
		t.Fatalf("connect refuses %q: %v", given.Args(), err)
	}
	if !reflect.DeepEqual(given, passed) {
		t.Errorf("connect got %+v from %q, run had %+v", passed, given.Args(), given)
	}
}
