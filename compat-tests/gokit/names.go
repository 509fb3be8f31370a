package gokit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Name is a fresh topic (or group, or transactional id) name for one test.
func Name(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

// Ctx is a context that ends after d or when the test ends.
func Ctx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
