package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Reasons a list or watch failed, as classified in ListWatchError.Reason.
// After Expired and TooLargeResourceVersion the Reflector relists with a
// consistent read; after WatchListTimeout it lists with LIST.
const (
	ReasonForbidden               = "Forbidden"               // 403; usually missing RBAC
	ReasonUnauthorized            = "Unauthorized"            // 401: credentials rejected
	ReasonNotFound                = "NotFound"                // 404: no such resource on the server
	ReasonExpired                 = "Expired"                 // 410: resourceVersion or continue token too old
	ReasonTooLargeResourceVersion = "TooLargeResourceVersion" // the server has not reached the RV yet
	ReasonTooManyRequests         = "TooManyRequests"         // 429: throttled
	ReasonTransport               = "Transport"               // no API status: connection, TLS, DNS, HTTP timeouts
	ReasonServerError             = "ServerError"             // any other API status (500, 503, invalid...)
	ReasonStaleList               = "StaleList"               // a relist older than the applied RV; not installed
	ReasonWatchStalled            = "WatchStalled"            // an open watch silent past WatchStallTimeout
	// ReasonWatchListTimeout: a WatchList stream fell silent for the
	// WatchListTimeout, did not end its initial events within three of them,
	// or sent a live event before its end bookmark.
	ReasonWatchListTimeout = "WatchListTimeout"
)

// ListWatchError is every error the Reflector reports (to the
// WatchErrorHandler and as the informer's LastError). It wraps the original
// error, so apierrors.IsForbidden, apierrors.IsNotFound,
// apierrors.IsResourceExpired and errors.Is/As keep working on it.
type ListWatchError struct {
	Name   string // of the informer or reflector
	Op     string // "list", "watchlist" or "watch"
	Reason string // one of the Reason* constants
	Err    error  // the original error
}

func (e *ListWatchError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("%s failed (%s): %v", e.Op, e.Reason, e.Err)
	}
	return fmt.Sprintf("%s: %s failed (%s): %v", e.Name, e.Op, e.Reason, e.Err)
}

// Unwrap returns the original error.
func (e *ListWatchError) Unwrap() error { return e.Err }

// classify wraps err in a ListWatchError with its reason.
func classify(name, op string, err error) *ListWatchError {
	if lwe, ok := errors.AsType[*ListWatchError](err); ok {
		return lwe
	}
	return &ListWatchError{Name: name, Op: op, Reason: reasonOf(err), Err: err}
}

func reasonOf(err error) string {
	switch {
	case isTooLargeResourceVersion(err):
		return ReasonTooLargeResourceVersion
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return ReasonExpired
	case apierrors.IsForbidden(err):
		return ReasonForbidden
	case apierrors.IsUnauthorized(err):
		return ReasonUnauthorized
	case apierrors.IsNotFound(err):
		return ReasonNotFound
	case apierrors.IsTooManyRequests(err):
		return ReasonTooManyRequests
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return ReasonServerError
	}
	return ReasonTransport
}

// isTooLargeResourceVersion matches the server's "Too large resource version"
// answer (a Timeout status with the ResourceVersionTooLarge cause; older
// servers only put it in the message).
func isTooLargeResourceVersion(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsTimeout(err) || !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return strings.Contains(strings.ToLower(s.Message), "too large resource version")
}

// needsConsistentRelist reports whether err means the resourceVersion we hold
// is unusable: relist at RV "" right away.
func needsConsistentRelist(err error) bool {
	if lwe, ok := errors.AsType[*ListWatchError](err); ok {
		return lwe.Reason == ReasonExpired || lwe.Reason == ReasonTooLargeResourceVersion
	}
	return false
}

// rewatchable reports whether a failure to open a watch should be retried
// (after backoff) as a watch from the same RV rather than a relist: the
// server was unreachable or throttling, our RV is still good.
func rewatchable(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}

// isContextError reports whether err ended a list or watch because ctx ended,
// which is no failure. While ctx is alive every error is one, even a
// context.Canceled that a ListerWatcher returns from a context of its own:
// treating that as a stop would make Run relist at once, without backoff,
// for as long as the ListerWatcher keeps returning it.
func isContextError(ctx context.Context, _ error) bool {
	return ctx.Err() != nil
}
