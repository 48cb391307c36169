// The notes of a sandbox child's writes: a C audit hook that notes the
// files the session's Python code opens for writing or renames onto, of
// the kinds the host checks after a block (sandbox/check), and the built-in
// module _vis_written whose take() hands them over.
#ifndef VIS_CHILD_WRITTEN_H
#define VIS_CHILD_WRITTEN_H

// vis_written_install adds the hook and registers _vis_written; the
// library must be loaded and the interpreter not yet started. NULL, or
// what went wrong.
const char *vis_written_install(void);

#endif
