package portal

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/ratescope/ratescope/core"
)

// ScopeLogin is the scope of POST /api/login: the failed sign-in attempts,
// counted by the caller's address.
const ScopeLogin = "login"

// LoginRoute is the path of the sign-in form's endpoint, POST.
const LoginRoute = "/api/login"

// LoginScope returns the scope of POST /api/login with its starting
// values, 5 per 15 minutes and 20 a day ("login.anon=5/15min,20/day").
// Every attempt is counted by the caller's address, as an anonymous
// caller, even with an Authorization header: the one who tries passwords
// is not signed in. core.Scope needs rates for signed-in callers too, so
// "login.user" has the same starting values, and -rates accepts it, but
// no request of the portal is counted there.
func LoginScope() core.Scope {
	return core.Scope{
		Name: ScopeLogin,
		Anon: []core.Rate{{Limit: 5, Period: 15 * time.Minute}, core.PerDay(20)},
		User: []core.Rate{{Limit: 5, Period: 15 * time.Minute}, core.PerDay(20)},
	}
}

// maxLoginBody is the most bytes of a sign-in body that are read.
const maxLoginBody = 4 << 10

// LoginError is the body of a refused sign-in: {"error": "..."}.
type LoginError struct {
	Error string `json:"error"`
}

// LoginOK is the body of a sign-in that succeeded: {"user": "NAME"}.
type LoginOK struct {
	User string `json:"user"`
}

// Login checks the sign-in of body, {"user":"NAME","password":"PASSWORD"},
// and returns the status and the JSON body to answer: 200 {"user":"NAME"}
// when the password is "pw-" followed by the name (a demonstration), 401
// {"error":"invalid credentials"} when it is not, 400 {"error":"..."} for a
// body that is no such JSON object or names no user. The limiter has
// counted the attempt already; the middleware gives back the units of a
// 2xx answer, so that only failures count.
func Login(body io.Reader) (int, any) {
	var in struct {
		User     *string `json:"user"`
		Password *string `json:"password"`
	}
	dec := json.NewDecoder(io.LimitReader(body, maxLoginBody))
	if err := dec.Decode(&in); err != nil || in.User == nil || *in.User == "" || in.Password == nil {
		return http.StatusBadRequest, LoginError{Error: `malformed body: want {"user":"NAME","password":"PASSWORD"}`}
	}
	if *in.Password != "pw-"+*in.User {
		return http.StatusUnauthorized, LoginError{Error: "invalid credentials"}
	}
	return http.StatusOK, LoginOK{User: *in.User}
}
