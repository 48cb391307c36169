package session

import (
	"sort"
	"strings"
)

// Fixed values of a session's environment.
const (
	// SessionPath is the PATH of a session's host and child.
	SessionPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// SessionLang is their LANG (no LC_* variables are set).
	SessionLang = "C.UTF-8"
)

// kept reports whether a session takes variable k from the client that
// starts its host: vis-agent's own settings (VIS_*, which say where its
// files are, which CPython to load and the session's limits), who the user
// is, PYENV_ROOT (where vis-agent looks for pyenv's CPythons), and the
// machine's trust and proxy settings (Trust). A switch, not a map: no
// package initializer for every start of vis-agent.
func kept(k string) bool {
	switch k {
	case "HOME", "USER", "LOGNAME", "PYENV_ROOT":
		return true
	}
	return strings.HasPrefix(k, "VIS_") || Trust(k)
}

// Trust reports whether k says which certificate authorities to trust or
// which proxy to use: a machine with its own CA or proxy needs them for
// any TLS request (a block's, uv's for install()). Names only, no values
// are judged; the lower-case proxy names are the ones curl reads first.
func Trust(k string) bool {
	switch k {
	case "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
		"http_proxy", "https_proxy", "no_proxy", "all_proxy":
		return true
	}
	return false
}

// TrustEnviron are the trust variables of env (KEY=VALUE), in order.
func TrustEnviron(env []string) []string {
	out := []string{}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && Trust(k) {
			out = append(out, kv)
		}
	}
	return out
}

// TrustFiles are the trust variables that name a file or a folder (a CA
// bundle, a folder of certificates): the jail lets the session read them.
var TrustFiles = [...]string{"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT"}

// Environ is the environment of a session's host, and so of its child,
// given that of the client starting it: fixed and documented, so that a
// second client with another environment finds the session as a first one
// with that environment would. It keeps VIS_*, HOME, USER, LOGNAME,
// PYENV_ROOT and the trust and proxy variables (Trust), sets PATH and LANG
// to SessionPath and SessionLang, and drops everything else: TZ and LC_*
// (the system's time zone and the C.UTF-8 locale), PYTHON* and UV_*
// settings, tokens and other secrets of the client.
//
// A variable given twice counts with its last value, as exec.Cmd's Env
// takes it: sorting both would leave the first one to win.
func Environ(client []string) []string {
	last := map[string]string{}
	for _, kv := range client {
		k, _, ok := strings.Cut(kv, "=")
		if ok && kept(k) {
			last[k] = kv
		}
	}
	env := []string{"PATH=" + SessionPath, "LANG=" + SessionLang}
	for _, kv := range last {
		env = append(env, kv)
	}
	sort.Strings(env)
	return env
}
