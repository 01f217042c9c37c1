package httplock

// The contract's JSON bodies, shared by this driver and lockd (the service
// lockcheck serves it with), so that the two cannot drift apart.

// LockBody is the body of a held lock: a grant (201 acquired, 200 renewed)
// and a read (GET). A field the service leaves out is nil here.
type LockBody struct {
	Name  string `json:"name,omitempty"`
	Owner string `json:"owner,omitempty"`
	// TTLSeconds is the TTL asked for (a grant), or what is left (a read).
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"`
	// Token is the grant's fencing token (> 0, growing per lock).
	Token *int64 `json:"token,omitempty"`
	// LeaseMS is how long the grant is valid from the request's arrival.
	LeaseMS *int64 `json:"lease_ms,omitempty"`
}

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error  string `json:"error"`
	Holder string `json:"holder,omitempty"` // 409: who holds the lock
	// Outcome is "unknown" or "failed" on a 503: whether the service may
	// have acted on the request.
	Outcome string `json:"outcome,omitempty"`
}
