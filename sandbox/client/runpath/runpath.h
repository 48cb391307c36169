// The run plans of warm `sandbox run` blocks (runpath.c, runpath_unsafe.go).
#ifndef VIS_PYEMBED_RUNPATH_H
#define VIS_PYEMBED_RUNPATH_H

// A run plan lives in $VIS_HOME/python/VIS_RUNPATH_DIR and begins with
// VIS_RUNPATH_MAGIC, which changes with the format.
#define VIS_RUNPATH_DIR "runpath"
#define VIS_RUNPATH_MAGIC "vis-runpath-2"

// The protocol's version (protocol.Version) and longest message
// (protocol.MaxLine); runpath_test.go checks both.
#define VIS_RUNPATH_VERSION "1"
#define VIS_RUNPATH_MAX_LINE (64 << 20)
#define VIS_RUNPATH_MAX_LINE_TEXT "67108864"

// The byte a remote session's multiplexer sends once it has opened the
// request's stream (remotemux.Ack); cli's tests check it.
#define VIS_RUNPATH_MUX_ACK '+'

// vis_runpath_missed reports whether this `sandbox run` looked for a run
// plan and could not carry its block, so Go should save its own.
int vis_runpath_missed(void);

#endif
