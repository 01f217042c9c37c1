package lockcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The protocol, one JSON object a line each way (docs/plugin.md):
//
//	-> {"id":1,"op":"setup","timeout_ms":120000}                 once, first: create your schema (idempotent)
//	-> {"id":2,"op":"acquire","lock":L,"owner":O,"timeout_ms":T}
//	-> {"id":3,"op":"renew","lock":L,"owner":O,"token":T,"timeout_ms":T}     only to a plug-in whose setup said "renew":true
//	-> {"id":4,"op":"release","lock":L,"owner":O,"token":T,"timeout_ms":T}   token only when the grant had one
//	<- {"id":N,"type":"ok"}                                      on an acquire, optionally "token" (integer >= 0)
//	                                                             and "lease_ms" (validity from the acquire's invocation);
//	                                                             on a renew, optionally "lease_ms" (the new validity,
//	                                                             from the renew's invocation; absent: the grant's lease);
//	                                                             on setup, optionally "renew":true (the plug-in renews)
//	<- {"id":N,"type":"fail","error":"..."}                      certainly did not take effect
//	<- {"id":N,"type":"info","error":"..."}                      outcome unknown
//
// timeout_ms is how long lockcheck waits (plus a grace of 2 s): a plug-in
// that gives up by then answers fail or info instead of being killed.

type request struct {
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	Lock      string `json:"lock,omitempty"`
	Owner     string `json:"owner,omitempty"`
	Token     int64  `json:"token,omitempty"`
	TimeoutMS int64  `json:"timeout_ms"`
}

type reply struct {
	ID      *int64 `json:"id"`
	Type    string `json:"type"`
	Token   *int64 `json:"token"`
	LeaseMS *int64 `json:"lease_ms"`
	Error   string `json:"error"`
	// Renew, on setup's ok: the plug-in answers renew requests.
	Renew bool `json:"renew"`
}

// parseReply decodes a reply line and checks it against its request.
// Unknown fields are allowed (room to grow); everything else is strict.
func parseReply(line []byte, req request) (reply, error) {
	var r reply
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return reply{}, fmt.Errorf("reply to %s %d is not a JSON object: %q: %v", req.Op, req.ID, clip(line), err)
	}
	if dec.More() {
		return reply{}, fmt.Errorf("reply to %s %d has more than one JSON value: %q", req.Op, req.ID, clip(line))
	}
	switch {
	case r.ID == nil:
		return reply{}, fmt.Errorf("reply to %s %d has no id: %q", req.Op, req.ID, clip(line))
	case *r.ID != req.ID:
		return reply{}, fmt.Errorf("reply to %s %d carries id %d", req.Op, req.ID, *r.ID)
	case r.Type != "ok" && r.Type != "fail" && r.Type != "info":
		return reply{}, fmt.Errorf("reply to %s %d has type %q, want ok, fail or info", req.Op, req.ID, r.Type)
	}
	if r.Type != "ok" || req.Op != "setup" {
		r.Renew = false // meaningful on setup's ok only
	}
	if r.Type != "ok" || (req.Op != "acquire" && req.Op != "renew") {
		r.Token, r.LeaseMS = nil, nil // meaningful on a granted acquire or renew only
		return r, nil
	}
	if req.Op == "renew" {
		r.Token = nil // a renew keeps the grant's token
	}
	if r.Token != nil && *r.Token < 0 {
		return reply{}, fmt.Errorf("reply to acquire %d: negative token %d", req.ID, *r.Token)
	}
	if r.LeaseMS != nil && *r.LeaseMS <= 0 {
		return reply{}, fmt.Errorf("reply to %s %d: lease_ms %d, want > 0 (or absent for a lock that does not expire)",
			req.Op, req.ID, *r.LeaseMS)
	}
	return r, nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
