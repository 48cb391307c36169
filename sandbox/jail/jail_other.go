//go:build !linux

package jail

// Apply restricts nothing outside Linux, and says so.
func Apply(p Policy) (Status, error) {
	var st Status
	if p.ConfineFiles || p.NoNetwork || p.NoNewProcesses || p.DropPrivileges || p.ScopeIPC || p.MemoryBytes > 0 || p.MaxThreads > 0 {
		st.Missing = append(st.Missing, "this system has no kernel layer (Landlock and seccomp are Linux's)")
	}
	return st, nil
}
