package ginlimit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/ginlimit"
)

// downStore stands for a store that cannot be reached, a Redis that is
// down: every call fails.
type downStore struct{}

var errDown = errors.New("connection refused")

func (downStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) { return downStore{}, nil }

func (downStore) Take(context.Context, core.Key, int64, time.Time) (core.Result, error) {
	return core.Result{}, errDown
}

func (downStore) GiveBack(context.Context, core.Key, int64, int64) error { return errDown }

func (downStore) Reset(context.Context, core.Key, time.Time) error { return errDown }

// Protect a sign-in form that fails closed: while the store fails, every
// attempt, right or wrong, is refused with 503 and Retry-After before the
// password is checked, so that an outage of Redis does not lift the limit
// on password guessing.
func ExampleConfig_failClosed() {
	lim, err := core.New(core.Config{
		Store: downStore{}, // stands for a Redis that is down
		Scopes: []core.Scope{{
			Name:     "login",
			Anon:     []core.Rate{{Limit: 5, Period: 15 * time.Minute}, core.PerDay(20)},
			User:     []core.Rate{core.PerMinute(5)}, // unused: every attempt is counted by address
			FailMode: core.FailClosed,                // refuse sign-ins while the store fails
		}},
		NumProxies: new(0),
		Logger:     slog.New(slog.DiscardHandler), // a refusal is logged at most once per 10s
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	limitLogin, err := ginlimit.New(ginlimit.Config{
		Limiter:  lim,
		Scope:    "login",
		GiveBack: func(c *gin.Context) bool { return c.Writer.Status() < 400 },
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	r := gin.New()
	r.POST("/login", limitLogin, func(c *gin.Context) {
		if c.PostForm("password") != "pw-"+c.PostForm("user") { // stands for a real password check
			c.JSON(http.StatusUnauthorized, gin.H{"error": "invalid credentials"})
			return
		}
		c.JSON(http.StatusOK, gin.H{"user": c.PostForm("user")})
	})

	for _, password := range []string{"pw-ann", "1234"} {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("user=ann&password="+password))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Body)
		fmt.Println("  Retry-After:", w.Header().Get("Retry-After"))
	}
	// Output:
	// 503 {"detail":"Service unavailable: the rate limits cannot be checked. Expected available in 1 seconds.","retry_after":1}
	//   Retry-After: 1
	// 503 {"detail":"Service unavailable: the rate limits cannot be checked. Expected available in 1 seconds.","retry_after":1}
	//   Retry-After: 1
}
