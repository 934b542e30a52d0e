package decay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ratescope/ratescope/internal/decay"
)

// rippled is the policy of the XRP Ledger server.
var rippled = decay.Policy{Window: 32, Warn: 5000, WarnCost: 2000, WarnEvery: decay.Second, Drop: 15000, DropCost: 3000}

const t0 = 1_900_000_000 * decay.Second

func TestDecayVector(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		at   int64 // seconds after the charge
		want int64
	}{
		{name: "0s", at: 0, want: 15000},
		{name: "1s", at: 1, want: 14531},
		{name: "2s", at: 2, want: 14077},
		{name: "10s", at: 10, want: 10919},
		{name: "32s", at: 32, want: 5430},
		{name: "64s", at: 64, want: 1965},
		{name: "128s", at: 128, want: 257},
		{name: "129s", at: 129, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Read once, long after, and read step by step: the same.
			s := decay.State{}
			s.Decay(32, t0)
			s.Sum += 480000
			s.Decay(32, t0+tc.at*decay.Second)
			assert.Equal(t, tc.want, s.Balance(32), "read once")

			if tc.at > 128 {
				return // read every second, the sum is never idle long enough to be zeroed
			}
			s = decay.State{}
			s.Decay(32, t0)
			s.Sum += 480000
			for ms := int64(0); ms <= tc.at*1000; ms += 250 {
				s.Decay(32, t0+ms*decay.Second/1000)
			}
			assert.Equal(t, tc.want, s.Balance(32), "read every 250ms")
		})
	}
}

func TestFractionalSecondsAreKept(t *testing.T) {
	t.Parallel()
	// Reads 0.6 s apart: the sum steps at 1 s and 2 s, not never and not
	// at every read.
	s := decay.State{}
	s.Decay(32, t0)
	s.Sum += 480000
	var got []int64
	for i := int64(1); i <= 4; i++ {
		s.Decay(32, t0+i*600_000_000)
		got = append(got, s.Balance(32))
	}
	assert.Equal(t, []int64{15000, 14531, 14531, 14077}, got)
	assert.Equal(t, t0+2*decay.Second, s.Last)
}

func TestClockSteppingBack(t *testing.T) {
	t.Parallel()
	s := decay.State{}
	s.Decay(32, t0)
	s.Sum += 480000
	s.Decay(32, t0-10*decay.Second)
	assert.Equal(t, int64(15000), s.Balance(32))
	s.Decay(32, t0+decay.Second)
	assert.Equal(t, int64(14531), s.Balance(32))
}

// steady charges perSecond requests of cost 20 in each second, evenly
// spread, and returns the balance after the last request of the last
// second and the highest balance seen in that second.
func steady(perSecond, seconds int64) (last, highest int64) {
	p := rippled
	p.Warn, p.Drop = 1<<62, 1<<62 // measure the decay alone
	var s decay.State
	for sec := range seconds {
		highest = 0
		for i := range perSecond {
			o := s.Charge(p, 20, t0+sec*decay.Second+i*decay.Second/perSecond)
			highest = max(highest, o.Balance)
			last = o.Balance
		}
	}
	return last, highest
}

func TestSteadyRate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		perSecond int64
		want      int64
	}{
		{name: "250/s", perSecond: 250, want: 4999},
		{name: "750/s", perSecond: 750, want: 14999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			last, highest := steady(tc.perSecond, 600)
			assert.Equal(t, tc.want, last)
			assert.Equal(t, tc.want, highest)
			again, _ := steady(tc.perSecond, 601)
			assert.Equal(t, tc.want, again, "settled")
		})
	}
}

func TestCharge(t *testing.T) {
	t.Parallel()
	var s decay.State
	// 4999 * 32 in the sum: just under the warning threshold.
	s.Decay(32, t0)
	s.Sum = 4999*32 + 31
	o := s.Charge(rippled, 0, t0)
	assert.Equal(t, decay.Outcome{Before: 4999, Balance: 4999}, o, "below the warning threshold")

	o = s.Charge(rippled, 1, t0)
	assert.Equal(t, decay.Outcome{Before: 4999, Balance: 5000 + 62, Warned: true, WarnCharged: true}, o, "at the threshold: warned, charged 2000")
	o = s.Charge(rippled, 0, t0+decay.Second-1)
	assert.Equal(t, decay.Outcome{Before: 5062, Balance: 5062}, o, "not warned again within a second")
	s.Decay(32, t0+decay.Second)
	before := s.Balance(32)
	o = s.Charge(rippled, 200*32, t0+decay.Second)
	assert.True(t, o.WarnCharged, "a second later: %+v", o)
	assert.Equal(t, before+200+62, o.Balance)

	// At the drop threshold: refused, charged 3000 instead of the cost.
	s = decay.State{Sum: 15000 * 32, Last: t0}
	o = s.Charge(rippled, 400, t0)
	assert.Equal(t, decay.Outcome{Before: 15000, Balance: 15093, Dropped: true}, o)
	assert.Equal(t, int64(15000*32+3000), s.Sum)

	// Just below: served, and warned.
	s = decay.State{Sum: 15000*32 - 1, Last: t0}
	o = s.Charge(rippled, 400, t0)
	assert.False(t, o.Dropped)
	assert.True(t, o.Warned)
	assert.False(t, o.WarnCharged, "the request reached the threshold: the warning adds nothing")
	assert.Equal(t, int64(15000*32-1+400), s.Sum)

	// A caller let back in just below the threshold: the warning is
	// charged up to it, and the caller stays in.
	s = decay.State{Sum: 14990 * 32, Last: t0}
	o = s.Charge(rippled, 20, t0)
	assert.Equal(t, decay.Outcome{Before: 14990, Balance: 14999, Warned: true, WarnCharged: true}, o)
	assert.Equal(t, int64(15000*32-1), s.Sum, "the warning is charged only up to the drop threshold")
	o = s.Charge(rippled, 0, t0)
	assert.False(t, o.Dropped, "not dropped by its warning")
}

func TestWarningEvery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		every int64
		want  []bool // warned at 0, 0.5, 1, 1.5, 2, 2.5 and 3 s
	}{
		{name: "rippled's second", every: decay.Second, want: []bool{true, false, true, false, true, false, true}},
		{name: "two seconds", every: 2 * decay.Second, want: []bool{true, false, false, false, true, false, false}},
		{name: "every request", every: 0, want: []bool{true, true, true, true, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := rippled
			p.WarnEvery = tc.every
			s := decay.State{Sum: 6000 * 32, Last: t0}
			var got []bool
			for i := range int64(7) {
				o := s.Charge(p, 20, t0+i*decay.Second/2)
				assert.Equal(t, o.Warned, o.WarnCharged)
				got = append(got, o.Warned)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSaturation(t *testing.T) {
	t.Parallel()
	const maxInt64 = 1<<63 - 1
	for _, tc := range []struct {
		name  string
		sum   int64
		cost  int64
		want  int64
		after string
	}{
		{name: "a huge cost on a balance", sum: 3000, cost: maxInt64, want: decay.MaxSum},
		{name: "a huge cost on nothing", sum: 0, cost: maxInt64, want: decay.MaxSum},
		{name: "a cost at the edge", sum: decay.MaxSum - 1, cost: 1, want: decay.MaxSum},
		{name: "a negative cost", sum: 3000, cost: -maxInt64, want: 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := decay.State{Sum: tc.sum, Last: t0}
			o := s.Charge(rippled, tc.cost, t0)
			assert.Equal(t, tc.want, s.Sum)
			assert.GreaterOrEqual(t, o.Balance, o.Before, "no request earns a credit")
			if tc.want == decay.MaxSum {
				o = s.Charge(rippled, maxInt64, t0)
				assert.True(t, o.Dropped, "the next request is refused")
				assert.Equal(t, decay.MaxSum, s.Sum, "and the drop cost saturates too")
			}
		})
	}
}

func TestRecoveryAfterADrop(t *testing.T) {
	t.Parallel()
	s := decay.State{Sum: 16000 * 32, Last: t0}
	o := s.Charge(rippled, 20, t0)
	assert.True(t, o.Dropped)
	// ln(16093/15000)*32 ≈ 2.25: below the threshold after 3 s.
	o = s.Charge(rippled, 20, t0+2*decay.Second)
	assert.True(t, o.Dropped, "still at or above at 2 s")
	s = decay.State{Sum: 16000 * 32, Last: t0}
	s.Charge(rippled, 20, t0)
	o = s.Charge(rippled, 20, t0+3*decay.Second)
	assert.False(t, o.Dropped, "below at 3 s: %+v", o)
}

func TestForget(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 129*decay.Second, decay.Forget(32))
	s := decay.State{Sum: 1 << 40, Last: t0}
	s.Decay(32, t0+decay.Forget(32))
	assert.Zero(t, s.Sum)
}
