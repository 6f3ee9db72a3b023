package operatorapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// AuditPage is the relay's answer to GET /fleet/api/audit: a page of its
// audit log of operator actions (store/audit), newest first.
type AuditPage struct {
	Records []AuditRecord `json:"records"`
	// Dropped counts the records the log's bound removed.
	Dropped uint64 `json:"dropped"`
	// Next is the "before" of the following page; zero at the end (or
	// when the page reached "since").
	Next uint64 `json:"next,omitempty"`
	// Now is the relay's clock when it answered.
	Now time.Time `json:"now"`
}

// AuditRecord is one operator action: who (the DID a token, session
// cookie or command signature proved), what, on which device, and
// whether the relay let it happen. It never holds a token, a cookie or
// a command's arguments. It is also the record the relay's audit log
// keeps (store/audit's Record), in the same JSON.
type AuditRecord struct {
	// Seq is the store's number of the record, assigned by its Append:
	// increasing, never reused.
	Seq uint64 `json:"seq"`
	// Time is when the relay saw the action, on its clock.
	Time time.Time `json:"time"`
	// Operator is the DID the action was proved by (a token, a session
	// cookie, a command's signature); empty when nothing proved one.
	Operator string `json:"operator,omitempty"`
	// Action is one of store/audit's Action constants (login, logout,
	// admit, purge, device-command, rollout, update-upload, tenant,
	// update-remove).
	Action string `json:"action"`
	// Command is the operation a device command asks for (set-mode, ...).
	Command string `json:"command,omitempty"`
	// Device is the DID (or, for a command that did not verify, the MQTT
	// name) of the device acted on.
	Device string `json:"device,omitempty"`
	// ObjectID and Purpose are a signed command's object id and purpose.
	ObjectID string `json:"objectId,omitempty"`
	Purpose  string `json:"purpose,omitempty"`
	// Detail says more of what was done (which records a purge took).
	Detail string `json:"detail,omitempty"`
	// Outcome is ok or refused (then Reason says why).
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// AuditQuery selects a page of the audit log: records with a seq below
// Before (zero: the newest), at most Limit of them (zero: the relay's
// page size), none older than Since (zero: no limit).
type AuditQuery struct {
	Before uint64
	Limit  int
	Since  time.Time
}

// Audit fetches one page of the relay's audit log.
func (c *Client) Audit(ctx context.Context, q AuditQuery) (AuditPage, error) {
	tok, err := bearer.IssuePurpose(c.Key, c.Origin, bearer.PurposeFleet, clock.Or(c.Clock).Now(), time.Minute)
	if err != nil {
		return AuditPage{}, err
	}
	v := url.Values{}
	if q.Before != 0 {
		v.Set("before", strconv.FormatUint(q.Before, 10))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	u := c.Origin + "/fleet/api/audit"
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	status, body, err := c.do(ctx, http.MethodGet, u, tok)
	if err != nil {
		return AuditPage{}, err
	}
	if status != http.StatusOK {
		var e struct{ Message string }
		json.Unmarshal(body, &e)
		if status == http.StatusNotFound && e.Message == "" {
			e.Message = "this relay serves no fleet console (it has no --operator), or it predates the audit log"
		}
		return AuditPage{}, fmt.Errorf("%s: HTTP %d: %s", u, status, e.Message)
	}
	var p AuditPage
	if err := json.Unmarshal(body, &p); err != nil {
		return AuditPage{}, fmt.Errorf("%s: %v", u, err)
	}
	return p, nil
}
