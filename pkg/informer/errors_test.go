package informer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// connRefused is the error a dial to a closed port returns.
func connRefused() *net.OpError {
	return &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

func TestErrorClassification(t *testing.T) {
	refused := connRefused()
	cases := []struct {
		err    error
		reason string
		relist bool
	}{
		{informertest.ErrForbidden(), ReasonForbidden, false},
		{apierrors.NewUnauthorized("who are you"), ReasonUnauthorized, false},
		{informertest.ErrNotFound(), ReasonNotFound, false},
		{informertest.ErrExpired(), ReasonExpired, true},
		{informertest.ErrGone(), ReasonExpired, true},
		{informertest.ErrTooLargeResourceVersion(), ReasonTooLargeResourceVersion, true},
		{apierrors.NewTimeoutError("Too large resource version: 5, current: 3", 1), ReasonTooLargeResourceVersion, true},
		{apierrors.NewTooManyRequests("slow down", 1), ReasonTooManyRequests, false},
		{informertest.ErrInternal(), ReasonServerError, false},
		{refused, ReasonTransport, false},
		{io.ErrUnexpectedEOF, ReasonTransport, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%v", tc.reason, tc.err), func(t *testing.T) {
			lwe := classify(podsResource, "watch", tc.err)
			if lwe.Reason != tc.reason {
				t.Fatalf("reason %s, want %s", lwe.Reason, tc.reason)
			}
			if !errors.Is(lwe, tc.err) {
				t.Fatal("original error not wrapped")
			}
			if needsConsistentRelist(lwe) != tc.relist {
				t.Fatalf("needsConsistentRelist = %v", !tc.relist)
			}
		})
	}
	if !rewatchable(refused) || rewatchable(informertest.ErrInternal()) {
		t.Fatal("rewatchable misclassifies")
	}
	if isContextError(context.Background(), fmt.Errorf("list: %w", context.Canceled)) {
		t.Fatal("a Canceled error with the informer's context alive counts as a stop")
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if !isContextError(stopped, fmt.Errorf("list: %w", context.Canceled)) {
		t.Fatal("an error after the informer's context ended does not count as a stop")
	}
}

func TestRVComparison(t *testing.T) {
	cases := []struct {
		a, b  string
		older bool
	}{
		{"9", "10", true}, {"10", "9", false}, {"10", "10", false},
		{"", "10", false}, {"abc", "10", false}, {"10", "abc", false},
	}
	for _, c := range cases {
		if got := rvOlder(c.a, c.b); got != c.older {
			t.Errorf("rvOlder(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
