package core_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

var rateCases = []struct {
	name  string
	in    string
	want  core.Rate
	error string // a part of the error; empty when the rate is valid
}{
	{name: "per minute", in: "60/min", want: core.Rate{Limit: 60, Period: time.Minute}},
	{name: "per day", in: "1000/day", want: core.PerDay(1000)},
	{name: "short units", in: "5/s", want: core.Rate{Limit: 5, Period: time.Second}},
	{name: "sec", in: "5/sec", want: core.Rate{Limit: 5, Period: time.Second}},
	{name: "second", in: "5/second", want: core.Rate{Limit: 5, Period: time.Second}},
	{name: "m", in: "7/m", want: core.PerMinute(7)},
	{name: "minute", in: "7/minute", want: core.PerMinute(7)},
	{name: "h", in: "9/h", want: core.Rate{Limit: 9, Period: time.Hour}},
	{name: "hour", in: "9/hour", want: core.Rate{Limit: 9, Period: time.Hour}},
	{name: "d", in: "3/d", want: core.PerDay(3)},
	{name: "secs", in: "5/secs", want: core.Rate{Limit: 5, Period: time.Second}},
	{name: "seconds", in: "5/10seconds", want: core.Rate{Limit: 5, Period: 10 * time.Second}},
	{name: "mins", in: "7/mins", want: core.PerMinute(7)},
	{name: "minutes", in: "3/minutes", want: core.PerMinute(3)},
	{name: "minutes with multiplier", in: "100/15 minutes", want: core.Rate{Limit: 100, Period: 15 * time.Minute}},
	{name: "hr", in: "9/hr", want: core.Rate{Limit: 9, Period: time.Hour}},
	{name: "hrs", in: "9/2hrs", want: core.Rate{Limit: 9, Period: 2 * time.Hour}},
	{name: "hours", in: "9/hours", want: core.Rate{Limit: 9, Period: time.Hour}},
	{name: "day", in: "3/day", want: core.PerDay(3)},
	{name: "days", in: "100/days", want: core.PerDay(100)},
	{name: "multiplier", in: "100/15m", want: core.Rate{Limit: 100, Period: 15 * time.Minute}},
	{name: "multiplier seconds", in: "5/10s", want: core.Rate{Limit: 5, Period: 10 * time.Second}},
	{name: "spaces", in: " 60 / min ", want: core.PerMinute(60)},
	{name: "multiplier with space", in: "2/15 min", want: core.Rate{Limit: 2, Period: 15 * time.Minute}},
	{name: "largest limit", in: "2147483647/s", want: core.Rate{Limit: core.MaxLimit, Period: time.Second}},
	{name: "longest period", in: "1/366d", want: core.Rate{Limit: 1, Period: 366 * 24 * time.Hour}},

	{name: "empty", in: "", error: "no slash"},
	{name: "no slash", in: "60", error: "no slash"},
	{name: "zero", in: "0/min", error: "not a positive integer"},
	{name: "negative", in: "-1/min", error: "not a positive integer"},
	{name: "plus sign", in: "+1/min", error: "not a positive integer"},
	{name: "fraction", in: "1.5/min", error: "not a positive integer"},
	{name: "no number", in: "/min", error: "not a positive integer"},
	{name: "too large", in: "2147483648/s", error: "above"},
	{name: "overflow", in: "99999999999999999999/s", error: "not a positive integer"},
	{name: "unknown unit", in: "60/fortnight", error: `unknown unit "fortnight"`},
	{name: "upper case unit", in: "60/MIN", error: "unknown unit"},
	{name: "misspelt unit", in: "60/minuets", error: `unknown unit "minuets"`},
	{name: "no unit", in: "60/", error: "unknown unit"},
	{name: "zero multiplier", in: "1/0m", error: "multiplier"},
	{name: "period too long", in: "1/367d", error: "longer than"},
	{name: "multiplier overflow", in: "1/99999999999999999999d", error: "multiplier"},
	{name: "two slashes", in: "1/2/min", error: "unknown unit"},
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for _, tc := range rateCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := core.ParseRate(tc.in)
			if tc.error != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.error)
				assert.Contains(t, err.Error(), `"`+tc.in+`"`, "the error quotes the input")
				assert.Contains(t, err.Error(), "want N/PERIOD", "the error says what is accepted")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.NoError(t, got.Validate())
		})
	}
}

func TestRateString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate core.Rate
		want string
	}{
		{core.PerMinute(60), "60/min"},
		{core.PerDay(1000), "1000/day"},
		{core.Rate{Limit: 100, Period: 15 * time.Minute}, "100/15min"},
		{core.Rate{Limit: 5, Period: 10 * time.Second}, "5/10sec"},
		{core.Rate{Limit: 5, Period: 90 * time.Second}, "5/90sec"},
		{core.Rate{Limit: 2, Period: 48 * time.Hour}, "2/2day"},
	} {
		assert.Equal(t, tc.want, tc.rate.String())
		back, err := core.ParseRate(tc.want)
		require.NoError(t, err)
		assert.Equal(t, tc.rate, back, "String is read back by ParseRate")
	}
}

func TestParseRates(t *testing.T) {
	t.Parallel()
	got, err := core.ParseRates("60/min,1000/day")
	require.NoError(t, err)
	assert.Equal(t, []core.Rate{core.PerMinute(60), core.PerDay(1000)}, got)

	for _, tc := range []struct {
		name, in, error string
	}{
		{"empty", "", "no slash"},
		{"one bad", "60/min,1000/dya", `"1000/dya"`},
		{"both bad", "x,y", `"y"`},
		{"same period", "60/min,100/1m", "two rates over one period, 60/min and 100/min: keep one rate per period"},
		{"too many", "1/s,2/min,3/h,4/d,5/2d", "at most 4"},
		{"trailing comma", "60/min,", "no slash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := core.ParseRates(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.error)
		})
	}
}

func TestRateValidate(t *testing.T) {
	t.Parallel()
	for _, r := range []core.Rate{
		{},
		{Limit: 1},
		{Limit: 1, Period: time.Millisecond},
		{Limit: 1, Period: 1500 * time.Millisecond},
		{Limit: 1, Period: 366*24*time.Hour + time.Second},
		{Limit: core.MaxLimit + 1, Period: time.Second},
	} {
		assert.Error(t, r.Validate(), "%#v", r)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, tc := range rateCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := core.ParseRate(s)
		if err != nil {
			assert.Contains(t, err.Error(), "want N/PERIOD")
			return
		}
		require.NoError(t, r.Validate(), "ParseRate(%q) = %v", s, r)
		back, err := core.ParseRate(r.String())
		require.NoError(t, err)
		assert.Equal(t, r, back)
	})
}
