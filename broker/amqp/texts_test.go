package amqp

import (
	"errors"
	"testing"
	"time"
)

// The final close's failure says how long it waited, not only its deadline:
// a connection already gone fails at once.
func TestFinalCloseText(t *testing.T) {
	got := finalCloseText(2, 1500*time.Microsecond, 30*time.Second, errors.New("Exception (504) Reason: \"channel/connection is not open\""))
	want := "epoch 2: final close not acknowledged (Exception (504) Reason: \"channel/connection is not open\") after 2ms of its 30s deadline: publishes still buffered may be lost"
	if got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}

// A closed channel counts ids in doubt, not publishes awaiting a confirm.
func TestInDoubtText(t *testing.T) {
	if got, want := inDoubtText(3, 1, 2), "epoch 3: channel closed, 1 in doubt (2 publishes of them awaited a confirm: originals and their timeout copies)"; got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
	if got, want := inDoubtText(3, 5, 5), "epoch 3: channel closed, 5 in doubt"; got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}
