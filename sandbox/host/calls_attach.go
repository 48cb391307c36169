package host

// attachLimit is the largest payload a host call may carry: an
// attachment's limit.
func (h *Host) attachLimit() int64 { return 64 << 20 }

// attachmentOps adds the attachment calls.
func (h *Host) attachmentOps(ops map[string]op) {}
