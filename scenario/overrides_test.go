package scenario

import (
	"testing"
	"time"
)

// --down sets the steps that take the broker down and bring it back
// themselves, and no other.
func TestSetDown(t *testing.T) {
	after := Duration(time.Second)
	s := &Scenario{Faults: []Fault{
		{Action: Kill, After: &after, Down: Duration(5 * time.Second)},
		{Action: DeleteQueue, After: &after, Down: Duration(2 * time.Second)},
		{Action: CrashConsumer, After: &after, Down: Duration(2 * time.Second)},
		{Action: Pause, After: &after, ManualRecovery: true},
		{Action: Unpause, After: &after},
		{Action: MemoryAlarm, After: &after, Down: Duration(5 * time.Second)},
	}}
	if n := s.SetDown(Duration(7 * time.Second)); n != 2 {
		t.Fatalf("set %d steps, want 2 (kill, memory-alarm)", n)
	}
	want := "kill at 1s after burst start, down 7s; delete-queue at 1s after burst start, down 2s; crash-consumer at 1s after burst start, down 2s; pause at 1s after burst start; unpause at 1s after burst start; memory-alarm at 1s after burst start, down 7s"
	if got := s.FaultSummary(); got != want {
		t.Fatalf("summary\n%s\nwant\n%s", got, want)
	}
}

// Live consumers added by a flag get a file's defaults; 0 removes them.
func TestSetConsumers(t *testing.T) {
	s := &Scenario{}
	s.SetConsumers(3)
	if (s.Consumers != Consumers{Count: 3, Prefetch: 100, AckEvery: 1, OnDelivery: ConsumerAck}) {
		t.Fatalf("added: %+v", s.Consumers)
	}
	s.Consumers.Prefetch = 7
	s.SetConsumers(5)
	if s.Consumers.Count != 5 || s.Consumers.Prefetch != 7 {
		t.Fatalf("changed: %+v, want count 5 and the prefetch kept", s.Consumers)
	}
	s.SetConsumers(0)
	if (s.Consumers != Consumers{}) {
		t.Fatalf("removed: %+v", s.Consumers)
	}
}
