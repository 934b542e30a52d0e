package portal_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

func TestLogin(t *testing.T) {
	t.Parallel()
	malformed := portal.LoginError{Error: `malformed body: want {"user":"NAME","password":"PASSWORD"}`}
	for _, tc := range []struct {
		name   string
		body   string
		status int
		reply  any
	}{
		{name: "right", body: `{"user":"alice","password":"pw-alice"}`, status: http.StatusOK, reply: portal.LoginOK{User: "alice"}},
		{name: "wrong", body: `{"user":"alice","password":"pw-bob"}`, status: http.StatusUnauthorized, reply: portal.LoginError{Error: "invalid credentials"}},
		{name: "empty password", body: `{"user":"alice","password":""}`, status: http.StatusUnauthorized, reply: portal.LoginError{Error: "invalid credentials"}},
		{name: "no password", body: `{"user":"alice"}`, status: http.StatusBadRequest, reply: malformed},
		{name: "no user", body: `{"password":"pw-"}`, status: http.StatusBadRequest, reply: malformed},
		{name: "empty user", body: `{"user":"","password":"pw-"}`, status: http.StatusBadRequest, reply: malformed},
		{name: "not JSON", body: `user=alice&password=pw-alice`, status: http.StatusBadRequest, reply: malformed},
		{name: "not an object", body: `["alice","pw-alice"]`, status: http.StatusBadRequest, reply: malformed},
		{name: "empty", body: ``, status: http.StatusBadRequest, reply: malformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, reply := portal.Login(strings.NewReader(tc.body))
			assert.Equal(t, tc.status, status)
			assert.Equal(t, tc.reply, reply)
		})
	}
}
