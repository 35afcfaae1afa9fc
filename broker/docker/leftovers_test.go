package docker

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// deadOwner is an Owner of this user and host whose process has exited.
func deadOwner(t *testing.T) Owner {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` to run:", err)
	}
	o := Self()
	o.PID, o.Start = cmd.Process.Pid, "1"
	return o
}

func TestOwnerAlive(t *testing.T) {
	self := Self()
	if self.Start == "" {
		t.Skip("no /proc: start times unknown")
	}
	if !self.Alive() || !self.Mine() {
		t.Fatalf("this process %+v: alive %v mine %v", self, self.Alive(), self.Mine())
	}
	reused := self
	reused.Start = strconv.Itoa(must(strconv.Atoi(self.Start)) + 1) // same pid, another start: the pid was reused
	other := self
	other.Host += "-elsewhere"
	for name, o := range map[string]Owner{"dead": deadOwner(t), "reused pid": reused, "other host": other, "no pid": {}} {
		if o.Alive() {
			t.Errorf("%s %+v reads as alive", name, o)
		}
	}
	if o, known := ownerOf(Labels("r1", true)); !known || o != self {
		t.Fatalf("labels read back as %+v (known %v), want %+v", o, known, self)
	}
	if _, known := ownerOf(map[string]string{LabelManaged: "true", LabelPID: "12"}); known {
		t.Fatal("a container with only the pid label (an older rmqtorture) reads as known")
	}
}

// TestOwnerInAnotherPIDNamespace: a pid recorded in another PID namespace
// (rmqtorture in a container, on the host's network, whose hostname is the
// host's) says nothing here. From the host's initial namespace the owner
// is alive while a process is in its namespace and gone after; from a
// container's namespace (Unseen) it always counts as alive, and the default
// cleanup scope leaves it.
func TestOwnerInAnotherPIDNamespace(t *testing.T) {
	self := Self()
	if self.PIDNS == "" {
		t.Skip("no /proc/self/ns/pid")
	}
	// This very process, but recorded in a namespace no process is in:
	// the same pid and start time mean nothing there.
	elsewhere := self
	elsewhere.PIDNS = "pid:[1]"
	if got := Labels("r1", false)[LabelPIDNS]; got != self.PIDNS {
		t.Fatalf("label %s = %q, want %q", LabelPIDNS, got, self.PIDNS)
	}
	if o, _ := ownerOf(Labels("r1", false)); o.PIDNS != self.PIDNS {
		t.Fatalf("labels read back with namespace %q, want %q", o.PIDNS, self.PIDNS)
	}
	inside := self
	inside.PIDNS = "pid:[4026532999]" // this test as if run in a container
	unlabelled := self
	unlabelled.PIDNS = "" // made by an rmqtorture before the label
	for _, tc := range []struct {
		name        string
		self        Owner
		owner       Owner
		alive, seen bool
		skip        string
	}{
		{"from the host, a namespace with no process", self, elsewhere, false, true, ""},
		{"from the host, this process's own namespace", self, self, true, true, "its rmqtorture process " + strconv.Itoa(self.PID) + " is still running (--force removes it anyway)"},
		{"from a container, the host's process", inside, self, true, false, "its rmqtorture process " + strconv.Itoa(self.PID) + " ran outside this container (PID namespace " + self.PIDNS + "), where this one cannot tell whether it still runs (cleanup on the host, or --force, removes it)"},
		{"from a container, another container's", inside, elsewhere, true, false, "its rmqtorture process " + strconv.Itoa(self.PID) + " ran outside this container (PID namespace pid:[1]), where this one cannot tell whether it still runs (cleanup on the host, or --force, removes it)"},
		{"from a container, an owner with no namespace label", inside, unlabelled, true, false, "its rmqtorture process " + strconv.Itoa(self.PID) + " ran outside this container (it recorded no PID namespace), where this one cannot tell whether it still runs (cleanup on the host, or --force, removes it)"},
		{"from the host, an owner with no namespace label", self, unlabelled, true, true, "its rmqtorture process " + strconv.Itoa(self.PID) + " is still running (--force removes it anyway)"},
	} {
		if tc.owner.PIDNS == "pid:[1]" && tc.self.PIDNS == self.PIDNS && self.PIDNS != initialPIDNamespace {
			continue // this test itself runs in a container: it cannot look at the host's processes
		}
		func() {
			real := Self
			Self = func() Owner { return tc.self }
			defer func() { Self = real }()
			if got := tc.owner.Alive(); got != tc.alive {
				t.Errorf("%s: Alive %v, want %v", tc.name, got, tc.alive)
			}
			if got := !tc.owner.Unseen(); got != tc.seen {
				t.Errorf("%s: Unseen %v, want %v", tc.name, !got, !tc.seen)
			}
			why, _ := Scope{}.Skip(Resource{Kind: "container", Run: "a", Owner: tc.owner, Known: true})
			if why != tc.skip {
				t.Errorf("%s: the default scope says %q, want %q", tc.name, why, tc.skip)
			}
			if why, _ := (Scope{Force: true}).Skip(Resource{Kind: "container", Run: "a", Owner: tc.owner, Known: true}); why != "" {
				t.Errorf("%s: --force leaves it: %q", tc.name, why)
			}
		}()
	}
}

func must(n int, err error) int {
	if err != nil {
		panic(err)
	}
	return n
}

// TestScope checks which labelled resources each cleanup scope takes.
func TestScope(t *testing.T) {
	dead, live := deadOwner(t), Self()
	other := dead
	other.UID++
	res := map[string]Resource{
		"dead":        {Kind: "container", Run: "a", Owner: dead, Known: true},
		"dead-keep":   {Kind: "container", Run: "b", Owner: dead, Known: true, Keep: true},
		"live":        {Kind: "container", Run: "c", Owner: live, Known: true},
		"other-user":  {Kind: "container", Run: "d", Owner: other, Known: true},
		"old":         {Kind: "container", Run: "e", Owner: Owner{PID: dead.PID}},
		"dead-net":    {Kind: "network", Run: "a", Owner: dead, Known: true},
		"other-keep":  {Kind: "volume", Run: "f", Owner: other, Known: true, Keep: true},
		"live-on-run": {Kind: "network", Run: "c", Owner: live, Known: true},
	}
	for _, tc := range []struct {
		scope Scope
		want  []string
	}{
		{Scope{}, []string{"dead", "dead-net"}},
		{Scope{Force: true}, []string{"dead", "dead-net", "live", "live-on-run"}},
		{Scope{Run: "b"}, []string{"dead-keep"}},
		{Scope{Run: "c"}, nil},
		{Scope{Run: "c", Force: true}, []string{"live", "live-on-run"}},
		{Scope{Run: "f"}, []string{"other-keep"}},
		{Scope{All: true}, []string{"dead", "dead-net", "old", "other-user"}},
		{Scope{All: true, Force: true}, []string{"dead", "dead-net", "live", "live-on-run", "old", "other-user"}},
	} {
		var got []string
		for name, r := range res {
			if why, _ := tc.scope.Skip(r); why == "" {
				got = append(got, name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v takes %v, want %v", tc.scope, got, tc.want)
		}
	}
	if _, foreign := (Scope{}).Skip(res["other-user"]); !foreign {
		t.Error("another user's container is not reported as foreign under the default scope")
	}
}

// TestRestoreRecord: the state file goes under $XDG_STATE_HOME/rmqtorture
// (else ~/.local/state/rmqtorture), is written while something is left to
// undo, read back by PendingRestores, and removed once nothing is.
func TestRestoreRecord(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	if d, _ := StateDir(); d != filepath.Join(state, "rmqtorture") {
		t.Fatalf("StateDir %s", d)
	}
	t.Setenv("XDG_STATE_HOME", "relative/ignored")
	t.Setenv("HOME", state)
	if d, _ := StateDir(); d != filepath.Join(state, ".local", "state", "rmqtorture") {
		t.Fatalf("StateDir with a relative XDG_STATE_HOME %s", d)
	}
	var logs logBuffer
	c := &Container{ID: "0123456789abcdef", Name: "rabbit", log: logs.logger(), attached: &attachment{warned: map[string]bool{}}}
	if err := c.alter("paused and unpaused", func(r *Restore) { r.Unpause = true }); err != nil {
		t.Fatal(err)
	}
	if err := c.alter("disconnected from its networks and reconnected", func(r *Restore) { r.Reconnect = []string{"bridge"} }); err != nil {
		t.Fatal(err)
	}
	if err := c.alter("paused and unpaused", func(r *Restore) { r.Unpause = true }); err != nil {
		t.Fatal(err)
	}
	list, err := PendingRestores()
	if err != nil || len(list) != 1 {
		t.Fatalf("pending %v, %v", list, err)
	}
	r := list[0]
	if r.Container != c.ID || r.Name != "rabbit" || r.Owner != Self() || time.Since(r.Since) > time.Minute ||
		!slices.Equal(r.Steps(), []string{"unpause", "reconnect to network bridge"}) || filepath.Base(r.File) != "0123456789ab-"+strconv.Itoa(os.Getpid())+".json" {
		t.Fatalf("read back %+v, steps %v", r, r.Steps())
	}
	if n := logs.count("which rmqtorture did not create"); n != 2 {
		t.Fatalf("%d warnings, want one per kind of fault (2):\n%s", n, logs.String())
	}
	c.undone(func(r *Restore) { r.Unpause = false })
	if list, _ := PendingRestores(); len(list) != 1 || !slices.Equal(list[0].Steps(), []string{"reconnect to network bridge"}) {
		t.Fatalf("after unpause: %v", list)
	}
	c.undone(func(r *Restore) { r.Reconnect = nil })
	if list, _ := PendingRestores(); len(list) != 0 {
		t.Fatalf("after reconnect, still pending: %+v", list[0])
	}
	owned := &Container{ID: "x", Owned: true}
	if err := owned.alter("killed", func(r *Restore) { r.Start = true }); err != nil {
		t.Fatal(err)
	}
	if list, _ := PendingRestores(); len(list) != 0 {
		t.Fatal("a container rmqtorture created got a restore record")
	}
}

// logBuffer collects text log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) count(s string) int { return strings.Count(b.String(), s) }

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// TestBuildCommand: a missing image of the project's own names the suite
// the build script takes; any other image, the script alone.
func TestBuildCommand(t *testing.T) {
	for image, want := range map[string]string{
		"rmqtorture/rabbitmq:4.3-forky":     "scripts/build-broker-image.sh forky",
		"rmqtorture/rabbitmq:3.10-bookworm": "scripts/build-broker-image.sh bookworm",
		"rmqtorture/rabbitmq:4.0-trixie":    "scripts/build-broker-image.sh trixie",
		"rmqtorture/rabbitmq:4.2-sid":       "scripts/build-broker-image.sh",
		"rmqtorture/absent:0":               "scripts/build-broker-image.sh",
		"rabbitmq:4":                        "scripts/build-broker-image.sh",
	} {
		if got := buildCommand(image); got != want {
			t.Errorf("buildCommand(%q) = %q, want %q", image, got, want)
		}
	}
}
