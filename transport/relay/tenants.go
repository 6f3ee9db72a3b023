package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay/console"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// tokenTenantQuota is Torpor's own refusal token: the request would take
// the agent's tenant past one of its quotas (docs/tenants.md); kind names
// the quota.
const tokenTenantQuota = "tenant_quota"

// answerTenantQuota is the refusal of a request past a tenant's quota:
// 429 for the request rate, 507 for what the tenant stores, naming the
// tenant and the quota. Nothing of the request was kept.
func answerTenantQuota(w http.ResponseWriter, req rpcRequest, qe *tenancy.QuotaError) {
	msg := fmt.Sprintf("tenant %s quota %s reached (%d)", qe.Tenant, qe.Quota, qe.Limit)
	retry := 0
	if qe.Quota == tenancy.QuotaRequests {
		retry = 1
	}
	answer(w, req, qe.Status(), CodeQueueFull, profileAnswer{Error: tokenTenantQuota, Message: msg, Kind: string(qe.Quota), Queued: false}, retry)
}

// tenantRate counts a sender's request to agent against its tenant's
// requests-per-second quota. It answers and returns false when the
// request ends here: past the quota, or the ledger failed. An agent in no
// tenant, or a relay without tenants, is not counted.
func (s *Relay) tenantRate(w http.ResponseWriter, req rpcRequest, agent did.DID) bool {
	l := s.cfg.Stores.Tenants
	if l == nil {
		return true
	}
	owner, ok, err := l.TenantOf(agent)
	if err == nil && ok {
		s.metrics.tenantRequest(owner)
		err = l.Allow(owner)
	}
	var qe *tenancy.QuotaError
	switch {
	case errors.As(err, &qe):
		s.metrics.tenantRefusal(owner, string(qe.Quota))
		answerTenantQuota(w, req, qe)
		return false
	case err != nil:
		s.storeFailedRPC(w, req, err)
		return false
	}
	return true
}

// isTenantOperator reports whether some tenant's owner named op.
func (s *Relay) isTenantOperator(op did.DID) bool {
	if s.cfg.Stores.Tenants == nil {
		return false
	}
	ts, err := s.cfg.Stores.Tenants.OperatorTenants(op)
	if err != nil {
		s.log.Warn("reading the tenants' operators failed", "err", err)
	}
	return len(ts) > 0
}

// mayAct checks that op may act on agent (list or purge its queue, admit
// it): for a device in a tenant, only an operator its owner named, never
// the relay's own operators; for a device in none, only the relay's
// operators. It answers 403 (and records the refusal) and returns false
// when op may not.
func (s *Relay) mayAct(w http.ResponseWriter, r *http.Request, op, agent did.DID) bool {
	l := s.cfg.Stores.Tenants
	if l == nil {
		return true
	}
	in, err := l.MayAct(op, agent)
	switch {
	case errors.Is(err, tenants.ErrNotOperator):
		s.recordOperator(r, op, "", "not an operator of the device's tenant")
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "not_tenant_operator",
			"message": "the device belongs to a tenant whose owner did not name this DID as an operator (docs/tenants.md)"})
		return false
	case err != nil:
		s.recordOperator(r, op, "", "the store failed")
		s.storeFailed(w, err)
		return false
	case !in && !s.operators[op.String()]:
		s.recordOperator(r, op, "", "a tenant's operator on a device in no tenant")
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "not_operator",
			"message": "this DID operates a tenant's devices only, and this device is in none"})
		return false
	}
	return true
}

// tenantOperator checks that caller is one of the operators the owner of
// the tenant in r's path ({did}) named (the relay's own operators only if
// the owner named them), and returns the tenant. It answers 404 for a DID
// that is no tenant and 403 not_tenant_operator (recorded, with detail)
// for anyone else. The tenant's update repository and its rollouts are
// guarded by it.
func (s *Relay) tenantOperator(w http.ResponseWriter, r *http.Request, caller did.DID, detail string) (tenants.Info, bool) {
	owner, ok := agentPath(w, r)
	if !ok {
		return tenants.Info{}, false
	}
	info, err := s.cfg.Stores.Tenants.Tenant(owner)
	switch {
	case errors.Is(err, tenants.ErrNoTenant):
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_tenant", "message": "no tenant of this relay has that owner DID"})
		return tenants.Info{}, false
	case err != nil:
		s.storeFailed(w, err)
		return tenants.Info{}, false
	case !slices.Contains(info.Operators, caller.String()):
		s.recordOperator(r, caller, detail, "not an operator of the tenant")
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "not_tenant_operator",
			"message": "only the operators the tenant's owner named act on its update repository and rollouts (docs/tenants.md)"})
		return tenants.Info{}, false
	}
	return info, true
}

// tenantEnrol puts agent into its owner's tenant when owner is one, within
// its devices quota. It returns false (and logs why) when the device must
// stay on probation.
func (s *Relay) tenantEnrol(owner, agent did.DID) bool {
	l := s.cfg.Stores.Tenants
	if l == nil {
		return true
	}
	if _, err := l.Tenant(owner); errors.Is(err, tenants.ErrNoTenant) {
		return true
	}
	if err := l.Enrol(owner, agent); err != nil {
		s.log.Warn("enrolment not taken into the owner's tenant; the device stays on probation", "agent", agent.String(), "owner", owner.String(), "err", err)
		return false
	}
	return true
}

// isTenant reports whether owner is a tenant of the relay: its
// enrolments are trusted as those of an --owner are.
func (s *Relay) isTenant(owner did.DID) bool {
	if s.cfg.Stores.Tenants == nil {
		return false
	}
	_, err := s.cfg.Stores.Tenants.Tenant(owner)
	return err == nil
}

// maxOperatorList caps the body of an operator list.
const maxOperatorList = 64 << 10

// serveTenantOperators is PUT /tenants/operators: a tenant's owner's
// signed operator list (tenancy.OperatorList), which replaces the
// tenant's operators. The owner's signature is its authority, so it takes
// no token: the relay checks the list as tenants.Ledger.SetOperators
// says, and answers 400 naming what is wrong with one it refuses.
func (s *Relay) serveTenantOperators(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, maxOperatorList)
	if err != nil {
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_request", "message": "reading the operator list failed (at most 64 KiB)"})
		return
	}
	owner, err := s.cfg.Stores.Tenants.SetOperators(body)
	if err != nil {
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_operator_list", "message": err.Error()})
		return
	}
	info, err := s.cfg.Stores.Tenants.Tenant(owner)
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	s.log.Info("tenant operators replaced by the owner's list", "tenant", owner.String(), "operators", len(info.Operators))
	httpjson.Write(w, http.StatusOK, map[string]any{"tenant": owner.String(), "operators": info.Operators, "hostSeesDevices": info.HostSeesDevices})
}

// serveTenantUsage is GET /operator/tenants/{did}/usage?hour=RFC3339: the
// tenant's usage record of that hour (default: the current one), signed
// by Access.UsageKey. The relay's operators (the host) and the tenant's
// own operators may read it; 404 for a DID that is no tenant.
func (s *Relay) serveTenantUsage(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.operator(w, r)
	if !ok {
		return
	}
	owner, ok := agentPath(w, r)
	if !ok {
		return
	}
	hour := s.clk.Now()
	if v := r.URL.Query().Get("hour"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_hour", "message": "hour: want an RFC 3339 time, such as 2026-12-05T10:00:00Z"})
			return
		}
		hour = t
	}
	if !s.usageReader(w, caller, owner) {
		return
	}
	rec, err := s.cfg.Stores.Tenants.Usage(owner, hour, s.cfg.Access.UsageKey)
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, rec)
}

// usageReader checks that caller may read owner's usage and that the
// relay can sign it; it answers and returns false when not.
func (s *Relay) usageReader(w http.ResponseWriter, caller, owner did.DID) bool {
	info, err := s.cfg.Stores.Tenants.Tenant(owner)
	switch {
	case errors.Is(err, tenants.ErrNoTenant):
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_tenant", "message": "no tenant of this relay has that owner DID"})
		return false
	case err != nil:
		s.storeFailed(w, err)
		return false
	case !s.operators[caller.String()] && !slices.Contains(info.Operators, caller.String()):
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "not_tenant_operator", "message": "only the relay's operators and the tenant's own read its usage"})
		return false
	case s.cfg.Access.UsageKey == nil:
		httpjson.Write(w, http.StatusNotImplemented, map[string]any{"error": "no_usage_key", "message": "the relay has no key to sign usage records (torpor-relay --usage-key)"})
		return false
	}
	return true
}

// tenantQueueRoom checks that size more bytes fit agent's tenant's
// queued_bytes and byte_hours quotas. The tenant's holdings are the live
// bytes the queue holds for its devices now, counted under the tenant's
// lock, which the caller holds until its enqueue is stored and then
// gives back by unlock, saying whether the record was stored: enqueues
// for one tenant's devices run one at a time, and a removal only frees
// room, so the queued_bytes quota holds exactly. The lock is the ledger's
// (tenants.Store.Lock): one relay's mutex with a bbolt ledger, a key of
// the shared bucket for relays on JetStream, so the quotas hold across
// relays too. For byte_hours the ledger accrues the tenant's byte-time up
// to now and records the bytes held with this request's (tenantHold). It
// answers 507 (and returns false) past a quota; an agent in no tenant is
// not counted.
func (s *Relay) tenantQueueRoom(ctx context.Context, w http.ResponseWriter, req rpcRequest, agent did.DID, size int, now time.Time) (unlock func(stored bool), ok bool) {
	none := func(bool) {}
	l := s.cfg.Stores.Tenants
	if l == nil {
		return none, true
	}
	owner, in, err := l.TenantOf(agent)
	if err != nil || !in {
		return none, err == nil || s.answerStoreFailed(w, req, err)
	}
	info, err := l.Tenant(owner)
	if err != nil || (info.Quotas.QueuedBytes <= 0 && info.Quotas.ByteHours <= 0) {
		return none, err == nil || s.answerStoreFailed(w, req, err)
	}
	release, err := l.Lock(ctx, "queued "+owner.String())
	if err != nil {
		return nil, s.answerStoreFailed(w, req, err)
	}
	held, err := s.tenantQueued(ctx, owner, now)
	if err == nil {
		err = l.Check(owner, tenancy.QuotaQueuedBytes, held, int64(size))
	}
	if err == nil && info.Quotas.ByteHours > 0 {
		unlock, err = s.tenantHold(owner, held, int64(size), release)
	}
	var qe *tenancy.QuotaError
	switch {
	case errors.As(err, &qe):
		release()
		s.metrics.enqueue(agent.String(), "full_tenant")
		s.metrics.tenantRefusal(owner, string(qe.Quota))
		answerTenantQuota(w, req, qe)
		return nil, false
	case err != nil:
		release()
		return nil, s.answerStoreFailed(w, req, err)
	case unlock == nil:
		unlock = func(bool) { release() }
	}
	return unlock, true
}

// tenantHold is the byte_hours check of n more bytes for owner, whose
// devices' queues hold held bytes (tenants.Store.Hold), made under the
// tenant's lock, which release gives back. The unlock it returns gives
// the ledger held back when the record was not stored, then releases the
// lock.
func (s *Relay) tenantHold(owner did.DID, held, n int64, release func()) (unlock func(stored bool), err error) {
	l := s.cfg.Stores.Tenants
	if err := l.Hold(owner, held, n); err != nil {
		return nil, err
	}
	return func(stored bool) {
		defer release()
		if stored {
			return
		}
		if err := l.Observe(owner, tenancy.QuotaQueuedBytes, held); err != nil {
			s.log.Warn("the tenant's bytes not given back to the ledger after a failed enqueue; its next count does", "tenant", owner.String(), "err", err)
		}
	}, nil
}

// tenantRemove runs remove, which takes records out of agent's queue (an
// acknowledgement, an operator's purge), and when agent is in a tenant
// with a byte_hours quota it does so under the tenant's lock and records
// what the tenant's queues hold after it (tenants.Store.Observe): the
// removed bytes stop accruing byte-hours when they leave. A failure to
// read or write the ledger is logged, never the removal's; the next
// count (an enqueue's, SampleTenants') puts it right.
func (s *Relay) tenantRemove(ctx context.Context, agent string, remove func() error) error {
	owner, ok := s.byteHoursTenant(agent)
	if !ok {
		return remove()
	}
	unlock, err := s.cfg.Stores.Tenants.Lock(ctx, "queued "+owner.String())
	if err != nil {
		return err
	}
	defer unlock()
	if err := remove(); err != nil {
		return err
	}
	if err := s.observeQueued(ctx, owner); err != nil {
		s.log.Warn("the bytes a tenant's queues hold after a removal not recorded; its next count does", "tenant", owner.String(), "err", err)
	}
	return nil
}

// byteHoursTenant returns agent's tenant when it has a byte_hours quota.
func (s *Relay) byteHoursTenant(agent string) (did.DID, bool) {
	l := s.cfg.Stores.Tenants
	d, err := did.Parse(agent)
	if l == nil || err != nil {
		return did.DID{}, false
	}
	owner, in, err := l.TenantOf(d)
	var info tenants.Info
	if err == nil && in {
		info, err = l.Tenant(owner)
	}
	if err != nil {
		s.log.Warn("reading a device's tenant failed; its queue's byte-hours wait for the next count", "agent", agent, "err", err)
		return did.DID{}, false
	}
	return owner, in && info.Quotas.ByteHours > 0
}

// observeQueued records in the ledger the bytes owner's devices' queues
// hold now.
func (s *Relay) observeQueued(ctx context.Context, owner did.DID) error {
	queued, err := s.tenantQueued(ctx, owner, s.clk.Now())
	if err != nil {
		return err
	}
	return s.cfg.Stores.Tenants.Observe(owner, tenancy.QuotaQueuedBytes, queued)
}

// tenantQueued is the live bytes queued for owner's devices.
func (s *Relay) tenantQueued(ctx context.Context, owner did.DID, now time.Time) (int64, error) {
	devs, err := s.cfg.Stores.Tenants.Devices(owner)
	if err != nil {
		return 0, err
	}
	return s.queuedFor(ctx, devs, now)
}

// queuedFor is the live bytes queued for devs.
func (s *Relay) queuedFor(ctx context.Context, devs []string, now time.Time) (int64, error) {
	var n int64
	for _, d := range devs {
		st, err := s.cfg.Stores.Queue.Stats(ctx, d, now)
		if err != nil {
			return 0, err
		}
		n += st.Bytes
	}
	return n, nil
}

// answerStoreFailed answers a failed store and returns false.
func (s *Relay) answerStoreFailed(w http.ResponseWriter, req rpcRequest, err error) bool {
	s.storeFailedRPC(w, req, err)
	return false
}

// consoleTenantOperator accepts a tenant's operator in the fleet console
// (console.Config.AlsoOperator).
func (s *Relay) consoleTenantOperator(id string) bool {
	d, err := did.Parse(id)
	return err == nil && s.isTenantOperator(d)
}

// consoleVisible is the console's and the fleet API's scoping
// (console.Source.Visible): a tenant's operator sees only its tenants'
// devices; the relay's own operators (the host) see the devices in no
// tenant, and a tenant's only when its owner's list allows it
// (hostSeesDevices). The relay's own reads (no operator) see all.
func (s *Relay) consoleVisible(ctx context.Context, agent string) bool {
	op := console.OperatorOf(ctx)
	if op == "" {
		return true
	}
	d, err := did.Parse(agent)
	if err != nil {
		return false
	}
	owner, in, err := s.cfg.Stores.Tenants.TenantOf(d)
	if err != nil {
		s.log.Warn("reading a device's tenant failed; the console hides it", "agent", agent, "err", err)
		return false
	}
	if !in {
		return s.operators[op]
	}
	info, err := s.cfg.Stores.Tenants.Tenant(owner)
	if err != nil {
		return false
	}
	return slices.Contains(info.Operators, op) || (s.operators[op] && info.HostSeesDevices)
}

// joinTenant puts an admitted device that is in no tenant into the
// tenant of the owner whose enrolment it presents: how the devices of a
// relay that had no tenants (or admitted them before its owner became a
// tenant) join their owners' tenants, at their next published state
// (docs/tenants.md, "Migration of a single-owner relay"). A device past
// its tenant's devices quota stays admitted, in no tenant, and the
// refusal is logged.
func (s *Relay) joinTenant(agent did.DID, enrolment []byte) {
	l := s.cfg.Stores.Tenants
	if l == nil {
		return
	}
	if _, in, err := l.TenantOf(agent); err != nil || in {
		return
	}
	owner, err := s.checkEnrolment(enrolment, agent)
	if err != nil || !s.isTenant(owner) {
		return
	}
	if err := l.Enrol(owner, agent); err != nil {
		s.log.Warn("an admitted device's enrolment not taken into its owner's tenant", "agent", agent.String(), "owner", owner.String(), "err", err)
		return
	}
	s.log.Info("admitted device joined its owner's tenant", "agent", agent.String(), "owner", owner.String())
}

// tenantKeyPackageRoom checks that the KeyPackages st publishes fit
// agent's tenant's keypackage_bytes quota: the tenant's holdings are the
// KeyPackages (pools and last-resort ones) its devices' states hold now,
// counted under a lock of the tenant that the caller holds (unlock) until
// the state is stored, as tenantQueueRoom does for queued bytes. A
// KeyPackage handed out only frees room. Past the quota the state is
// refused, and nothing of it is stored.
func (s *Relay) tenantKeyPackageRoom(ctx context.Context, agent did.DID, st wire.State) (unlock func(), err error) {
	l := s.cfg.Stores.Tenants
	if l == nil || (len(st.KeyPackages) == 0 && len(st.LastResort) == 0) {
		return func() {}, nil
	}
	owner, in, err := l.TenantOf(agent)
	if err != nil || !in {
		return func() {}, err
	}
	if info, err := l.Tenant(owner); err != nil || info.Quotas.KeyPackageBytes <= 0 {
		return func() {}, err
	}
	if unlock, err = l.Lock(ctx, "keypackages "+owner.String()); err != nil {
		return nil, err
	}
	held, mine, err := s.tenantKeyPackages(ctx, owner, agent.String())
	if err == nil {
		after := kpBytes(st.KeyPackages...)
		if !st.ReplaceKeyPackages {
			after += mine.pool
		}
		if len(st.LastResort) > 0 {
			after += int64(len(st.LastResort))
		} else {
			after += mine.lastResort
		}
		if d := after - mine.pool - mine.lastResort; d > 0 {
			err = l.Check(owner, tenancy.QuotaKeyPackageBytes, held, d)
		}
	}
	var qe *tenancy.QuotaError
	if errors.As(err, &qe) {
		s.metrics.tenantRefusal(owner, string(qe.Quota))
		err = fmt.Errorf("%s: %w", tokenTenantQuota, qe)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// kpHeld is one device's KeyPackage bytes: its pool and its last-resort
// KeyPackage.
type kpHeld struct{ pool, lastResort int64 }

// tenantKeyPackages returns the KeyPackage bytes owner's devices hold,
// and agent's own.
func (s *Relay) tenantKeyPackages(ctx context.Context, owner did.DID, agent string) (held int64, mine kpHeld, err error) {
	devs, err := s.cfg.Stores.Tenants.Devices(owner)
	if err != nil {
		return 0, kpHeld{}, err
	}
	return s.keyPackagesOf(ctx, devs, agent)
}

// keyPackagesOf returns the KeyPackage bytes devs hold, and agent's own.
func (s *Relay) keyPackagesOf(ctx context.Context, devs []string, agent string) (held int64, mine kpHeld, err error) {
	for _, d := range devs {
		pool, lr, err := s.cfg.Stores.States.KeyPackages(ctx, d)
		if errors.Is(err, agents.ErrUnknownAgent) {
			continue
		}
		if err != nil {
			return 0, kpHeld{}, err
		}
		h := kpHeld{kpBytes(pool...), int64(len(lr))}
		held += h.pool + h.lastResort
		if d == agent {
			mine = h
		}
	}
	return held, mine, nil
}

func kpBytes(kps ...[]byte) int64 {
	var n int64
	for _, kp := range kps {
		n += int64(len(kp))
	}
	return n
}

// SampleTenants records in the tenants' ledger the bytes each tenant's
// devices hold now in the queue and in KeyPackages, and the blob bytes of
// its update repository (tenants.Store.Observe), from which their usage
// records' byte-hours and peaks are made.
// torpor-relay calls it every few seconds; without tenants it does
// nothing. For a tenant with a byte_hours quota the queue's count is
// taken under the tenant's lock, as its enqueues and removals take theirs
// (tenantQueueRoom, tenantRemove), so that it never records a count
// older than theirs; for that quota it only notices records that expired
// since the tenant's last change.
func (s *Relay) SampleTenants(ctx context.Context) error {
	l := s.cfg.Stores.Tenants
	if l == nil {
		return nil
	}
	ts, err := l.Tenants()
	if err != nil {
		return err
	}
	for _, t := range ts {
		if err := s.sampleQueued(ctx, t); err != nil {
			return err
		}
		kps, _, err := s.tenantKeyPackages(ctx, t.Owner, "")
		if err != nil {
			return err
		}
		if err := l.Observe(t.Owner, tenancy.QuotaKeyPackageBytes, kps); err != nil {
			return err
		}
		if err := s.sampleUpdateBytes(t.Owner, t.Held.UpdateBytes); err != nil {
			return err
		}
	}
	return nil
}

// sampleUpdateBytes observes the blob bytes owner's update repository
// holds, if the relay hosts repositories and they are not the ledger's
// already (held): uploads and removals observe them too
// (observeUpdateBytes), and every observation of the ledger, the queued
// bytes' above included, raises the hour's peaks from all it holds.
func (s *Relay) sampleUpdateBytes(owner did.DID, held int64) error {
	repo, err := s.tenantUpdates(owner)
	switch {
	case errors.Is(err, updaterepo.ErrNoPartitions):
		return nil // no repository for the tenant
	case err != nil:
		return err
	case repo == nil:
		return nil
	}
	n, err := repo.BlobBytes()
	if err != nil || n == held {
		return err
	}
	return s.cfg.Stores.Tenants.Observe(owner, tenancy.QuotaUpdateBytes, n)
}

// sampleQueued records the bytes t's devices' queues hold now, under the
// tenant's lock when it has a byte_hours quota.
func (s *Relay) sampleQueued(ctx context.Context, t tenants.Info) error {
	if t.Quotas.ByteHours > 0 {
		unlock, err := s.cfg.Stores.Tenants.Lock(ctx, "queued "+t.Owner.String())
		if err != nil {
			return err
		}
		defer unlock()
	}
	return s.observeQueued(ctx, t.Owner)
}

// tenantForget takes a forgotten agent out of its tenant, freeing its
// room in the devices quota.
func (s *Relay) tenantForget(agent string) error {
	if s.cfg.Stores.Tenants == nil {
		return nil
	}
	d, err := did.Parse(agent)
	if err != nil {
		return nil // not a device of a tenant
	}
	return s.cfg.Stores.Tenants.Forget(d)
}

// carryTenant puts a retired agent's successor in its tenant in its
// place (tenants.Ledger.Move), as carryAdmission carries its admission.
func (s *Relay) carryTenant(old, successor string) {
	if s.cfg.Stores.Tenants == nil {
		return
	}
	o, err1 := did.Parse(old)
	n, err2 := did.Parse(successor)
	if err := errors.Join(err1, err2); err != nil {
		return
	}
	if err := s.cfg.Stores.Tenants.Move(o, n); err != nil {
		s.log.Warn("the successor of a retired agent is not in its tenant", "agent", old, "successor", successor, "err", err)
	}
}

// queuePlacer is a queue store that keeps each tenant's queues under
// subjects of the tenant's own (store/jsstore's Queue.Place;
// docs/tenants.md, "Subject prefixes").
type queuePlacer interface {
	Place(ctx context.Context, agent, tenant string) (moved bool, err error)
}

// placeQueue puts agent's queue under its tenant's subjects, or back under
// its own when it is in none, at every state the device publishes, when
// the relay has tenants and its queue store keeps them apart. A queue
// that holds records moves once the device has taken them (the store's
// Ack); a failure is logged and the move tried again at the next state.
func (s *Relay) placeQueue(ctx context.Context, agent did.DID) {
	p, ok := s.queue.Store.(queuePlacer)
	if !ok || s.cfg.Stores.Tenants == nil {
		return
	}
	owner, in, err := s.cfg.Stores.Tenants.TenantOf(agent)
	if err != nil {
		s.log.Warn("the device's tenant is unknown: its queue stays where it is", "agent", agent.String(), "err", err)
		return
	}
	tenant := ""
	if in {
		tenant = owner.String()
	}
	moved, err := p.Place(ctx, agent.String(), tenant)
	switch {
	case err != nil:
		s.log.Warn("the device's queue was not moved to its tenant's subjects", "agent", agent.String(), "tenant", tenant, "err", err)
	case moved:
		s.log.Info("the device's queue moved to its tenant's subjects", "agent", agent.String(), "tenant", tenant)
	}
}
