package core

// headerWarning is the response field that [Decision.SetHeaders] sets to
// "load" when the caller of a window limit has used more than
// Config.LoadRatio of a limit: "Ratescope-Warning: load". The name is
// ratescope's own, so that it never clashes with a field a later revision
// of the IETF RateLimit draft might define.
const headerWarning = "Ratescope-Warning"

// loadWarning is the value of headerWarning.
const loadWarning = "load"
