package scenario

import (
	"strings"
	"testing"
	"time"
)

func queueOf(t QueueType, args map[string]any, dlq bool) Queue {
	return Queue{Type: t, Arguments: args, DeadLetterQueue: dlq}
}

// The settings table follows the queue type and the broker version: a
// quorum queue's reject-publish-dlx acts as drop-head on every release that
// has quorum queue length limits (rabbitmq-server PR #16673), a classic
// queue's does what it says.
func TestSettingRulesFollowTypeAndVersion(t *testing.T) {
	rpdlx := map[string]any{"x-max-length": 500, "x-overflow": "reject-publish-dlx"}
	for _, tt := range []struct {
		q       Queue
		version string
		want    string // effective x-overflow
	}{
		{queueOf(Quorum, rpdlx, false), "RabbitMQ 4.0.5", "drop-head"},
		{queueOf(Quorum, rpdlx, false), "RabbitMQ 3.10.8", "drop-head"},
		{queueOf(Quorum, rpdlx, false), "", "drop-head"},                         // not known yet: every version
		{queueOf(Quorum, rpdlx, false), "RabbitMQ 3.7.28", "reject-publish-dlx"}, // before quorum queues had length limits
		{queueOf(Quorum, rpdlx, false), "RabbitMQ weird", "drop-head"},
		{queueOf(Classic, rpdlx, false), "RabbitMQ 4.0.5", "reject-publish-dlx"},
	} {
		args, _ := tt.q.Effective(tt.version)
		if got := args["x-overflow"]; got != tt.want {
			t.Errorf("%s %q: x-overflow acts as %v, want %s", tt.q.Type, tt.version, got, tt.want)
		}
	}
	// The loaded arguments are never changed.
	if rpdlx["x-overflow"] != "reject-publish-dlx" {
		t.Fatal("Effective changed the queue's arguments")
	}
}

// Which settings discard confirmed messages by design: TTL and drop-head,
// including a quorum queue's reject-publish-dlx; none with a dead-letter
// queue rmqtorture drains.
func TestDiscardsOn(t *testing.T) {
	for _, tt := range []struct {
		q    Queue
		want string
	}{
		{queueOf(Quorum, map[string]any{"x-max-length": 500, "x-overflow": "reject-publish-dlx"}, false), "drop-head"},
		{queueOf(Quorum, map[string]any{"x-max-length": 500, "x-overflow": "reject-publish-dlx"}, true), ""},
		{queueOf(Classic, map[string]any{"x-max-length": 500, "x-overflow": "reject-publish-dlx"}, false), ""},
		{queueOf(Classic, map[string]any{"x-max-length": 500, "x-overflow": "reject-publish"}, false), ""},
		{queueOf(Classic, map[string]any{"x-max-length-bytes": 500}, false), "drop-head"},
		{queueOf(Classic, map[string]any{"x-message-ttl": 200}, false), "TTL"},
		{queueOf(Classic, map[string]any{"x-message-ttl": 200, "x-max-length": 9}, false), "TTL, drop-head"},
		{queueOf(Classic, map[string]any{"x-message-ttl": 200, "x-dead-letter-exchange": "elsewhere"}, false), "TTL"},
		{queueOf(Classic, map[string]any{"x-message-ttl": 200}, true), ""},
	} {
		if got := tt.q.DiscardsOn("RabbitMQ 4.0.5"); got != tt.want {
			t.Errorf("%s %v dlq %v: %q, want %q", tt.q.Type, tt.q.Arguments, tt.q.DeadLetterQueue, got, tt.want)
		}
	}
	q := queueOf(Quorum, map[string]any{"x-max-length": 500, "x-overflow": "reject-publish-dlx"}, false)
	if q.Discards() != "drop-head" {
		t.Fatalf("Discards %q", q.Discards())
	}
}

// The allowed-loss reasons name the real cause: TTL, drop-head, a
// non-durable queue, transient messages (never "transient" for a TTL).
func TestAllowedLossNamesTheReason(t *testing.T) {
	no := false
	for _, tt := range []struct {
		s    Scenario
		want string
	}{
		{Scenario{Queue: queueOf(Classic, map[string]any{"x-message-ttl": 200}, false)}, "TTL"},
		{Scenario{Queue: Queue{Type: Classic, Durable: &no}}, "non-durable queue"},
		{Scenario{Queue: Queue{Type: Classic}, Load: Load{Persistent: &no}}, "transient messages"},
		{Scenario{Queue: Queue{Type: Classic, Durable: &no}, Load: Load{Persistent: &no}}, "non-durable queue, transient messages"},
		{Scenario{Queue: Queue{Type: Quorum}, Load: Load{Persistent: &no}}, ""},
		{Scenario{Queue: Queue{Type: Classic}}, ""},
	} {
		got := tt.s.AllowedLoss("RabbitMQ 4.0.5")
		if LossLabels(got) != tt.want {
			t.Errorf("%+v: %q, want %q", tt.s.Queue, LossLabels(got), tt.want)
		}
		for _, r := range got {
			if !strings.Contains(r.Why, "https://www.rabbitmq.com/docs/") {
				t.Errorf("%s: no source in %q", r.Label, r.Why)
			}
		}
	}
	s := Scenario{Queue: queueOf(Classic, map[string]any{"x-message-ttl": 200}, false)}
	if why := s.AllowedLoss("")[0].Why; !strings.HasPrefix(why, "x-message-ttl 200 ms: ") {
		t.Fatalf("why %q", why)
	}
}

// The dead-letter path: when it exists, how early a message may take it,
// and what the queue promises on it.
func TestDeadLetterPath(t *testing.T) {
	alo := map[string]any{"x-message-ttl": 2000, "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"}
	for _, tt := range []struct {
		name        string
		s           Scenario
		ok          bool
		after       time.Duration
		atLeastOnce bool
	}{
		{"classic TTL", Scenario{Queue: queueOf(Classic, map[string]any{"x-message-ttl": 2000}, true)}, true, 2 * time.Second, false},
		{"no dead-letter queue", Scenario{Queue: queueOf(Classic, map[string]any{"x-message-ttl": 2000}, false)}, false, 0, false},
		{"nothing dead-letters", Scenario{Queue: queueOf(Classic, nil, true)}, false, 0, false},
		{"reject-publish-dlx on classic dead-letters only rejected publishes", Scenario{Queue: queueOf(Classic, map[string]any{"x-max-length": 5, "x-overflow": "reject-publish-dlx"}, true)}, false, 0, false},
		{"reject-publish-dlx on quorum drops the head", Scenario{Queue: queueOf(Quorum, map[string]any{"x-max-length": 5, "x-overflow": "reject-publish-dlx"}, true)}, true, 0, false},
		{"TTL and drop-head: the earlier", Scenario{Queue: queueOf(Classic, map[string]any{"x-message-ttl": 2000, "x-max-length": 5}, true)}, true, 0, false},
		{"rejecting consumers", Scenario{Queue: queueOf(Quorum, nil, true), Consumers: Consumers{Count: 1, OnDelivery: ConsumerReject}}, true, 0, false},
		{"quorum at least once", Scenario{Queue: queueOf(Quorum, alo, true)}, true, 2 * time.Second, true},
		{"at least once without reject-publish falls back", Scenario{Queue: queueOf(Quorum, map[string]any{"x-message-ttl": 2000, "x-dead-letter-strategy": "at-least-once"}, true)}, true, 2 * time.Second, false},
		{"classic ignores at least once", Scenario{Queue: queueOf(Classic, alo, true)}, true, 2 * time.Second, false},
	} {
		p, ok := tt.s.DeadLetterPath("RabbitMQ 4.0.5")
		if ok != tt.ok || p.AfterPublish != tt.after || p.AtLeastOnce != tt.atLeastOnce {
			t.Errorf("%s: %+v %v", tt.name, p, ok)
			continue
		}
		if ok && (!strings.Contains(p.Guarantee, "https://www.rabbitmq.com/docs/") || tt.s.DeadLetterPathLossAllowed(p) == tt.atLeastOnce) {
			t.Errorf("%s: guarantee %q, allowed %v", tt.name, p.Guarantee, tt.s.DeadLetterPathLossAllowed(p))
		}
	}
	yes := true
	s := Scenario{Queue: queueOf(Quorum, alo, true), Expect: Expect{AllowDeadLetterPathLoss: &yes}}
	if p, _ := s.DeadLetterPath(""); !s.DeadLetterPathLossAllowed(p) {
		t.Fatal("expect.allow_dead_letter_path_loss: true not honoured")
	}
}

// A setting that does not do what its name says on the queue type is a
// warning naming the version and the source; matrix scenarios warn per
// queue type.
func TestSettingWarnings(t *testing.T) {
	s := Scenario{Queue: queueOf(Quorum, map[string]any{"x-max-length": 500, "x-overflow": "reject-publish-dlx"}, false)}
	w := s.SettingWarnings("RabbitMQ 4.0.5")
	if len(w) != 1 || !strings.HasPrefix(w[0], "queue.arguments.x-overflow: reject-publish-dlx on a quorum queue acts as drop-head on RabbitMQ 4.0.5: ") || !strings.Contains(w[0], "rabbitmq-server PR #16673") {
		t.Fatalf("warnings %q", w)
	}
	s.Matrix.QueueTypes = []QueueType{Classic, Quorum}
	if w := s.SettingWarnings(""); len(w) != 1 || !strings.Contains(w[0], "every RabbitMQ version the settings table covers") {
		t.Fatalf("matrix warnings %q", w)
	}
	s.Queue.Arguments = map[string]any{"x-max-length": 500, "x-overflow": "reject-publish"}
	if w := s.SettingWarnings("RabbitMQ 4.0.5"); len(w) != 0 {
		t.Fatalf("reject-publish warned: %q", w)
	}
}

// Every row of the table cites a source and has a valid version constraint.
func TestSettingRulesAreSourced(t *testing.T) {
	for _, r := range SettingRules() {
		if r.Source == "" || r.Does == "" || r.ActsAs == "" {
			t.Errorf("%+v: incomplete", r)
		}
		if r.Versions != "" && !r.Matches(r.Type, map[string]any{r.Argument: r.Value}, "RabbitMQ 99.0.0") {
			t.Errorf("%+v: bad or closed version range", r)
		}
	}
}

func TestAllowedLossOnPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		q    QueueType
		want string
	}{{Quorum, ""}, {Classic, "power loss on a classic queue"}, {Stream, "power loss on a stream"}} {
		s := &Scenario{Queue: Queue{Type: tc.q}, Faults: []Fault{{Action: PowerLoss}}}
		if got := LossLabels(s.AllowedLoss("")); got != tc.want {
			t.Errorf("%s with a power-loss step: %q, want %q", tc.q, got, tc.want)
		}
		s.Faults[0].Action = Kill
		if got := LossLabels(s.AllowedLoss("")); got != "" {
			t.Errorf("%s with a kill: %q, want none", tc.q, got)
		}
	}
}

// On a 3-node cluster a stream may lose confirmed messages only to a cut
// of a majority of its nodes at once: a stream confirms once a majority
// has written a message.
func TestAllowedLossOnStreamClusterPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		f    Fault
		want string
	}{
		{Fault{Action: PowerLoss, Target: TargetAll}, "power loss on a stream"},
		{Fault{Action: PowerLoss, Target: TargetMajority}, "power loss on a stream"},
		{Fault{Action: PowerLoss, Target: TargetMinority}, ""},
		{Fault{Action: PowerLoss, Target: TargetLeader}, ""},
		{Fault{Action: PowerLoss, Node: 2}, ""},
		{Fault{Action: Kill, Target: TargetAll}, ""},
	} {
		s := &Scenario{Broker: Broker{Nodes: 3}, Queue: Queue{Type: Stream}, Faults: []Fault{tc.f}}
		if got := LossLabels(s.AllowedLoss("")); got != tc.want {
			t.Errorf("%s of %s: %q, want %q", tc.f.Action, tc.f.TargetOf(3, "q"), got, tc.want)
		}
	}
}
