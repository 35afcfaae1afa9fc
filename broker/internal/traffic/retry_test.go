package traffic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The drain's deadline cuts its last attempt short; the error names the
// attempt before it, which says why the drain was still going.
func TestRetryDrainNamesTheErrorBeforeTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	attempts := 0
	err := RetryDrain(ctx, `"q"`, func() (bool, error) {
		attempts++
		if attempts == 1 {
			return false, errors.New("the queue holds 99 ready messages")
		}
		<-ctx.Done()
		return false, ctx.Err()
	}, nil, func(error) {})
	if want := `deadline passed while draining "q" (last error: the queue holds 99 ready messages)`; err == nil || err.Error() != want || attempts != 2 {
		t.Fatalf("after %d attempts: %v, want %q", attempts, err, want)
	}
	if err := RetryDrain(ctx, `"q"`, func() (bool, error) { return false, ctx.Err() }, nil, func(error) {}); err == nil || !strings.HasSuffix(err.Error(), "(last error: context deadline exceeded)") {
		t.Fatalf("only the deadline's error: %v", err)
	}
}
