package cmd

import (
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

const groupsFile = `version: 1
scenarios:
  - name: a
    load: {messages: 100}
  - name: b
    load: {messages: 100}
    broker: {images: ["x:1", "y:1"]}
  - name: g
    runs: [a, b]
    broker: {images: ["p:1", "q:1"]}
  - name: h
    runs: [b, a]
  - name: k
    runs: [a]
    broker: {images: ["docker.io/rmqtorture/rabbitmq:4.0-trixie", "p:1"]}
`

// expanded runs expandNames on groupsFile with args (flags, then names)
// and lists the runs as scenario@image ("" image: the scenario's own).
func expanded(t *testing.T, args ...string) (string, bool, []string) {
	t.Helper()
	f, err := scenario.Parse("g.yaml", []byte(groupsFile))
	if err != nil {
		t.Fatal(err)
	}
	o := &runOpts{}
	c := newRunWith(&globalOpts{}, o)
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	runs, versions, groups, err := o.expandNames(c, f, "g.yaml", c.Flags().Args())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.scenario.Name+"@"+r.image)
	}
	return strings.Join(got, " "), versions, groups
}

// TestExpandGroups: a group runs its scenarios in its order on its images
// (each scenario on its own broker.images when the group sets none);
// --images overrides both, --image runs one image; --all skips groups;
// a scenario named twice runs once per image.
func TestExpandGroups(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		want     string
		versions bool
		groups   string
	}{
		{[]string{"a"}, "a@", false, ""},
		{[]string{"b"}, "b@x:1 b@y:1", true, ""},
		{[]string{"g"}, "a@p:1 a@q:1 b@p:1 b@q:1", true, "g"},
		{[]string{"h"}, "b@x:1 b@y:1 a@", true, "h"},
		{[]string{"--images", "m:1,n:1", "g"}, "a@m:1 a@n:1 b@m:1 b@n:1", true, "g"},
		{[]string{"--images", "m:1", "a"}, "a@m:1", true, ""},
		{[]string{"--image", "m:1", "b"}, "b@", false, ""},
		{[]string{"--image", "m:1", "g"}, "a@ b@", true, "g"},
		{[]string{"--all"}, "a@ b@x:1 b@y:1", true, ""},
		{[]string{"g", "a", "h"}, "a@p:1 a@q:1 b@p:1 b@q:1 a@ b@x:1 b@y:1", true, "g h"},
		// a on its own image is the run k made on that image (spelt otherwise).
		{[]string{"k", "a"}, "a@docker.io/rmqtorture/rabbitmq:4.0-trixie a@p:1", true, "k"},
	} {
		got, versions, groups := expanded(t, tc.args...)
		if got != tc.want || versions != tc.versions || strings.Join(groups, " ") != tc.groups {
			t.Errorf("%v: runs %q versions %v groups %v, want %q %v %q", tc.args, got, versions, groups, tc.want, tc.versions, tc.groups)
		}
	}
}

// TestGroupRunPlans: `run g` plans each run with its image and without
// broker.images, and `list` shows the group as one.
func TestGroupRunPlans(t *testing.T) {
	s := scenario.Scenario{Name: "b", Broker: scenario.Broker{Image: "own:1", Images: []string{"x:1", "y:1"}}}
	p := planScenario(&s, "y:1")
	if p.Broker.Image != "y:1" || p.Broker.Images != nil || s.Broker.Images == nil {
		t.Fatalf("plan %+v, scenario %+v", p.Broker, s.Broker)
	}
	if p := planScenario(&s, ""); p.Broker.Image != "own:1" {
		t.Fatalf("own image: %+v", p.Broker)
	}
	code, stdout, stderr := runCLI(t, "list", "-f", "../scenarios.yaml")
	if code != ExitPass {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "upgrade-check                      [group: 4 scenarios on 2 images] The upgrade check: runs the dur…"
	if !strings.Contains(stdout, want+"\n") {
		t.Fatalf("list lacks\n%s\n%s", want, stdout)
	}
	code, stdout, _ = runCLI(t, "validate", "upgrade-check", "-f", "../scenarios.yaml")
	if code != ExitPass || !strings.Contains(stdout, "    broker:\n      images:\n        - rmqtorture/rabbitmq:4.0-trixie\n        - rmqtorture/rabbitmq:4.3-forky\n    runs:\n      - kill-mid-burst\n") || strings.Contains(stdout, "queue:") {
		t.Fatalf("validate upgrade-check: exit %d\n%s", code, stdout)
	}
}
