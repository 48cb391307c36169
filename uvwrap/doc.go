// Package uvwrap locates, verifies and runs the uv pinned for vis-agent.
//
// vis-agent ships one exact uv, recorded in uv.pin: its version and, for each
// release platform, the PyPI wheel it comes from with that wheel's sha256.
// fetch-uv.sh (beside uv.pin) downloads and unpacks it; `make uv` puts the
// host's uv at bin/vis-agent-python/uv, and release archives carry it at
// vis-agent-python/uv beside the vis-agent binary. The pin is embedded in the
// binary, so vis-agent knows which uv it needs.
//
// The uv used is never looked up on PATH: it is <exe dir>/vis-agent-python/uv
// or, failing that, <VIS_HOME>/python/uv, and it must report the pinned
// version.
package uvwrap
