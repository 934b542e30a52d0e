package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ratescope/ratescope/balance"
)

// Charge implements [balance.Store] with one EVALSHA command, sent as
// Take's are (batched with concurrent decisions, through the same circuit
// breaker and Timeout), so that it fails in the same ways: [ErrUnavailable]
// while the breaker is open, a wrapped Redis or context error otherwise.
// The over-limit cache is not used: every refused attempt of a dropped
// caller must be charged.
//
// Like Take, it counts on the Redis server's clock unless
// Config.RequestClock is set.
//
// The key is the one of the caller's windows with "b" and the window in
// seconds in place of the periods ("ratescope:ws:{a...}:b32"), so it has
// the same hash tag and a Redis Cluster keeps it on the same master; it
// expires 4*Window+1 s after the balance's last step, when the balance
// would be zero anyway.
func (s *Store) Charge(ctx context.Context, req balance.Request) (balance.Result, error) {
	if err := checkBalanceRequest(&req); err != nil {
		return balance.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return balance.Result{}, fmt.Errorf("redisstore: charge: %w", err)
	}
	now := s.scriptNow(req.Now)
	key := balanceKey(s.prefix, &req)
	nd := s.nodes.forKey(ctx, key)
	if err := s.admit(nd); err != nil {
		return balance.Result{}, err
	}
	var out [5]int64
	k, err := s.run(ctx, nd, newBalanceCall(key, now, &req), out[:])
	if err == nil && k != len(out) {
		err = fmt.Errorf("script returned %d values, want %d", k, len(out))
	}
	if err != nil {
		return balance.Result{}, fmt.Errorf("redisstore: charge: %w", err)
	}
	return balance.Result{Dropped: out[0] == 1, Warned: out[1] == 1, WarnCharged: out[2] == 1, Before: out[3], Balance: out[4]}, nil
}

// balanceKey returns the key of req's balance: see [Store.Charge].
func balanceKey(prefix string, req *balance.Request) string {
	var buf [128]byte
	b := append(buf[:0], prefix...)
	b = appendEscaped(b, req.Scope)
	b = append(b, ":{"...)
	b = appendID(b, req.Caller.Key())
	b = append(b, "}:b"...)
	return string(strconv.AppendInt(b, int64(req.Policy.Window/time.Second), 10))
}

// newBalanceCall returns a call from callPool for the balance script on key.
func newBalanceCall(key string, now int64, req *balance.Request) *call {
	c := callPool.Get().(*call)
	c.key, c.lua = key, balanceLua
	p := &req.Policy
	c.nums = [numArgs]int64{now, req.Cost, int64(p.Window / time.Second), p.Warn, p.WarnCost, p.WarnEvery.Microseconds(), p.Drop, p.DropCost}
	c.args[0], c.args[1], c.args[2], c.args[3] = "evalsha", &balanceSHA, "1", &c.key
	const n = 8
	for i := range n {
		c.args[4+i] = &c.nums[i]
	}
	c.n = 4 + n
	return c
}

var errBalanceRequest = errors.New("redisstore: balance request needs a cost of 0 or more and a window of whole seconds")

// checkBalanceRequest rejects what the script cannot count; no
// core.Limiter builds such a request.
func checkBalanceRequest(req *balance.Request) error {
	w := req.Policy.Window
	if req.Cost < 0 || w < time.Second || w%time.Second != 0 {
		return errBalanceRequest
	}
	return nil
}

var _ balance.Store = (*Store)(nil)
