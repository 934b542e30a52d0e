package core

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxLimit is the largest number of units a Rate may allow in one period.
const MaxLimit = 1<<31 - 1

// maxPeriod is the longest period a Rate may have: 366 days.
const maxPeriod = 366 * 24 * time.Hour

// A Rate allows Limit units of work (requests, each costing 1 unless said
// otherwise) in any interval of length Period. The zero value allows nothing
// and is rejected by [Rate.Validate].
type Rate struct {
	Limit  int64
	Period time.Duration
}

// PerMinute returns a Rate of n units a minute.
func PerMinute(n int64) Rate { return Rate{Limit: n, Period: time.Minute} }

// PerDay returns a Rate of n units a day.
func PerDay(n int64) Rate { return Rate{Limit: n, Period: 24 * time.Hour} }

// rateSyntax is quoted by every parse error so that a user sees what is
// accepted.
const rateSyntax = `want N/PERIOD with N a positive integer and PERIOD an optional positive multiplier and a unit: s, sec, secs, second, seconds; m, min, mins, minute, minutes; h, hr, hrs, hour, hours; d, day, days (e.g. "60/min", "100/15m", "1000/days")`

// units are the units of a period, in lower case. A plural is accepted
// whatever the multiplier ("1/days" is a day), as other frameworks'
// rate strings allow.
var units = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// parseRate parses a rate written N/PERIOD; see [Rate.UnmarshalText].
func parseRate(s string) (Rate, error) {
	bad := func(why string) (Rate, error) {
		return Rate{}, fmt.Errorf("invalid rate %q: %s; %s", s, why, rateSyntax)
	}
	num, per, ok := strings.Cut(s, "/")
	if !ok {
		return bad("no slash")
	}
	num, per = strings.TrimSpace(num), strings.TrimSpace(per)
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || num[0] == '+' {
		return bad(fmt.Sprintf("N %q is not a positive integer", num))
	}
	if n > MaxLimit {
		return bad(fmt.Sprintf("N %d is above %d", n, MaxLimit))
	}
	i := 0
	for i < len(per) && per[i] >= '0' && per[i] <= '9' {
		i++
	}
	mult := int64(1)
	if i > 0 {
		mult, err = strconv.ParseInt(per[:i], 10, 64)
		if err != nil || mult < 1 {
			return bad(fmt.Sprintf("multiplier %q is not a positive integer", per[:i]))
		}
	}
	unit, ok := units[strings.TrimSpace(per[i:])]
	if !ok {
		return bad(fmt.Sprintf("unknown unit %q", strings.TrimSpace(per[i:])))
	}
	if mult > int64(maxPeriod/unit) {
		return bad(fmt.Sprintf("period is longer than %s", maxPeriod))
	}
	return Rate{Limit: n, Period: time.Duration(mult) * unit}, nil
}

// parseRates parses a comma-separated list of rates, such as
// "60/min,1000/day": the value of a [RateTable] entry. Each part follows
// [Rate.UnmarshalText]; the list must not be empty, must hold at most
// [MaxLimits] rates, and no two may share a period.
func parseRates(s string) ([]Rate, error) {
	var rates []Rate
	var errs []error
	for part := range strings.SplitSeq(s, ",") {
		r, err := parseRate(part)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rates = append(rates, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := validateRates(rates); err != nil {
		return nil, fmt.Errorf("invalid rates %q: %w", s, err)
	}
	return rates, nil
}

// Validate reports whether r can be enforced: a Limit from 1 to [MaxLimit]
// and a Period of at least one second, a whole number of seconds, at most
// 366 days.
func (r Rate) Validate() error {
	switch {
	case r.Limit < 1 || r.Limit > MaxLimit:
		return fmt.Errorf("rate %s: limit must be from 1 to %d", r, MaxLimit)
	case r.Period < time.Second || r.Period > maxPeriod || r.Period%time.Second != 0:
		return fmt.Errorf("rate %s: period must be a whole number of seconds from 1s to %s", r, maxPeriod)
	}
	return nil
}

func validateRates(rates []Rate) error {
	if len(rates) == 0 {
		return fmt.Errorf("no rate given: want 1 to %d rates, such as 60/min,1000/day", MaxLimits)
	}
	if len(rates) > MaxLimits {
		return fmt.Errorf("%d rates, at most %d allowed: keep the shortest and the longest periods", len(rates), MaxLimits)
	}
	var errs []error
	for i, r := range rates {
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
		}
		for _, o := range rates[:i] {
			if o.Period == r.Period {
				errs = append(errs, fmt.Errorf("two rates over one period, %s and %s: keep one rate per period", o, r))
			}
		}
	}
	return errors.Join(errs...)
}

// String returns r in the form [Rate.UnmarshalText] reads, using the largest whole unit:
// "60/min", "1000/day", "100/15min".
func (r Rate) String() string {
	return strconv.FormatInt(r.Limit, 10) + "/" + periodString(r.Period)
}

// periodString writes a period as [multiplier]unit, or as a Go duration if
// it is not a whole number of seconds.
func periodString(p time.Duration) string {
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"day", 24 * time.Hour}, {"hour", time.Hour}, {"min", time.Minute}, {"sec", time.Second}} {
		if p > 0 && p%u.d == 0 {
			if p == u.d {
				return u.name
			}
			return strconv.FormatInt(int64(p/u.d), 10) + u.name
		}
	}
	return p.String()
}
