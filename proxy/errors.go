package proxy

import "errors"

var (
	// ErrBadCassetteName means a header-chosen cassette name escapes its directory.
	ErrBadCassetteName = errors.New("bad cassette name")
	// ErrConfig means a Config cannot be used.
	ErrConfig = errors.New("bad proxy configuration")
	// errUpstreamTimeout is the cause of a cancelled upstream exchange that
	// went quiet for longer than Config.UpstreamTimeout.
	errUpstreamTimeout = errors.New("upstream timed out")
	// errClientLeft is the cause of a cancelled upstream exchange whose
	// client went away and did not come back within the grace period.
	errClientLeft = errors.New("client left")
)
