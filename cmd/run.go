package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/broker/stream"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/redact"
	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

type runOpts struct {
	// engine describes the container engine (docker.EngineDescription),
	// for result.json; "" with --uri.
	engine    string
	modes     []string
	messages  int
	window    int
	image     string
	container string
	// containers are the running containers --containers names as the
	// nodes of a cluster, in node order (rmq1 first); nil without it.
	containers []string
	nodes      int
	keep       bool
	out        string
	hostPort   int
	// address is --broker-address: the engine host's IP that ports are
	// published on and clients dial (docker.DefaultAddress unless set).
	address     string
	all         bool
	queueTypes  []string
	persistence []string
	repeat      int
	seed        uint64
	summaryFile string
	// metricsFile and metricsListen are --metrics-file and
	// --metrics-listen (metricsexport.go); live serves the latter (nil
	// without it), metricResults are the scenarios the file holds.
	metricsFile, metricsListen string
	live                       *liveMetrics
	metricResults              []*scenario.Result
	// officialRegistry is --official-registry (pull.go).
	officialRegistry string
	// junitFile is --junit (ciout.go); junitResults the scenarios it holds.
	junitFile    string
	junitResults []*scenario.Result
	bucket       time.Duration
	prog         *progress // nil unless stderr is a terminal
	// lastDir and lastResult are the folder and result of the last
	// scenario runScenario ran (explore reads its verdict).
	lastDir    string
	lastResult *scenario.Result
	// reuse is a broker rmqtorture created for an earlier explore trial,
	// run on as this run's own (not removed at its end); nil: create one.
	reuse *underTest
	// keepBroker leaves the broker this run creates running at its end,
	// in created, for explore to reuse and remove.
	keepBroker bool
	created    *underTest
	warnings   [][]string // per plan, from apply

	// output is -o: the default summary, wide tables, json or markdown.
	output outputFormat
	// failOnMissing sets expect.max_unconfirmed_missing to 0: an order
	// fire-and-forget loses without an error fails the verdict.
	failOnMissing bool
	// The settings people reach for (settingflags.go): each overrides one
	// scenario field.
	rate       float64
	duration   time.Duration
	size       int
	publishers int
	consumers  int
	prefetch   int
	killAt     string
	down       time.Duration
	queueType  string
	// uri names a broker rmqtorture did not start (uri.go): no Docker,
	// no fault but command steps.
	uri string
	// allowCommands lets the run play command steps (commands.go).
	allowCommands bool
	// json is -o json's array of several scenarios' results (jsonarray.go).
	json jsonArray
	// printed counts the scenarios whose result write printed.
	printed int
	// images is --images; versions, when set, collects every run into one
	// versions report (images.go).
	images   []string
	versions *versionsRun
	// split is a run split across processes (parts.go).
	split splitOpts
}

func newRun(g *globalOpts) *cobra.Command { return newRunWith(g, &runOpts{}) }

// newRunWith builds the run command around o, which its flags fill.
func newRunWith(g *globalOpts, o *runOpts) *cobra.Command {
	c := &cobra.Command{
		Use:   "run SCENARIO [SCENARIO...] | run --all",
		Short: "Run scenarios against a real broker and write report.md and result.json",
		Long: `run starts a labelled RabbitMQ container (or uses the one --container names;
with --nodes 3 or 5, or broker.nodes in the scenario, a cluster of that many
nodes, or the running ones --containers names), runs each named scenario's
publishing modes in turn on fresh queues, injects the planned faults through
the Docker Engine API, restores the broker, drains the queue, reconciles
every message id and judges the result.

Per scenario it prints a headline on stdout (per mode: delivered/sent,
confirmed messages lost, fire-and-forget orders missing, duplicates, the
publish rate against the fastest mode's and the p99 confirm latency; then
the verdict with its reasons) and a table that fits 100 columns (-o wide:
every column; -o json: result.json, or with several scenarios one JSON
array of them; -o markdown: report.md), and writes
report.md and result.json to a folder under --out, whose paths it prints
(on stderr with -o json or -o markdown, so stdout holds only the document;
the verdict and its reasons go to stderr then too).
A fire-and-forget order lost without an error is a warning; with
--fail-on-missing (or expect.max_unconfirmed_missing: 0) it fails the run.
Each mode's queue is deleted after its drain, and the container it created is
removed at the end (neither with --keep), also on error and on Ctrl-C.
--port, --out and --summary-file (and --container) are checked before
anything starts (exit 2). A first Ctrl-C (or SIGTERM) stops publishing,
finishes the fault under way, drains what was published and writes the
partial report (exit 130; a mode cut short has its exact expectations "not
checked: interrupted"); a second one writes what was measured, removes the
container and exits; a third exits at once.

--images a,b (or broker.images in the scenario; --images wins, --image runs
one) runs every scenario, every mode and matrix cell, once on each image: an
ordinary run each, with its own folder and result.json, then one versions
report (versions-<time>-<id>/versions.md and versions.json under --out) that
stdout shows instead of each run's table: a column per broker version, the
verdict per version and what changed, each difference marked expected (with
its because) when both versions' expect.versions state it. A behaviour a
version decides (who dead-letters and after how many deliveries, the x-death
count) that changed with no scope stating it fails the run; counts that vary
with the fault's timing, rates and latencies are listed, not judged. A group
entry (runs: [...], e.g. upgrade-check) runs its scenarios on its
broker.images into one such report. --all runs every scenario once and skips
group entries (the scenarios they run are entries of the file).

Exit codes: 0 pass, 1 failed verdict, 2 bad input, 3 inconclusive, 4 error,
130 interrupted (with several scenarios or images: the worst).`,
		Example: `  rmqtorture run kill-mid-burst
  rmqtorture run kill-mid-burst --mode confirm-window --messages 5000
  rmqtorture run kill-mid-burst --image rabbitmq:4 --keep
  rmqtorture run kill-mid-burst --nodes 3
  rmqtorture run delivery-limit \
    --images rmqtorture/rabbitmq:4.0-trixie,rmqtorture/rabbitmq:4.3-forky
  rmqtorture run upgrade-check
  rmqtorture run kill-mid-burst --fail-on-missing -o json > result.json`,
		Args: func(c *cobra.Command, args []string) error {
			if o.all != (len(args) == 0) {
				return usageErr(errors.New("name one or more scenarios, or --all (not both)"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error { return o.run(c, g, args) },
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.modes, "mode", nil, "publishing modes to run, comma-separated (fire-and-forget, confirm-each, confirm-window, transactional); default: the scenario's")
	fl.IntVar(&o.messages, "messages", 0, "orders per burst (overrides load.messages)")
	fl.IntVar(&o.window, "window", 0, "confirm-window: unconfirmed messages in flight (overrides load.window)")
	fl.StringVar(&o.image, "image", "", "broker image (overrides broker.image; default "+scenario.DefaultImage+", else, when the engine lacks it, the official rabbitmq image of its version)")
	fl.StringVar(&o.officialRegistry, "official-registry", "docker.io", "registry to pull the official rabbitmq image from when the project's image (rmqtorture/rabbitmq:…) is missing, e.g. a mirror at 127.0.0.1:5000")
	fl.StringVar(&o.container, "container", "", "use this running container as the broker instead of creating one; rmqtorture will kill and restart it but never remove it")
	fl.IntVar(&o.nodes, "nodes", 0, "RabbitMQ nodes to form into one cluster: 1, 3 or 5 (overrides broker.nodes)")
	fl.StringSliceVar(&o.containers, "containers", nil, "use these running containers, comma-separated, as the nodes of a cluster instead of creating them (3 or 5; sets broker.nodes; not with --container or --nodes); rmqtorture will kill and restart them but never remove them")
	fl.BoolVar(&o.keep, "keep", false, "keep the broker container at the end")
	fl.StringVar(&o.out, "out", "rmqtorture-results", "folder under which each run writes its report folder")
	fl.IntVar(&o.hostPort, "port", 0, "host port to publish AMQP on, on --broker-address (default: a free one)")
	fl.StringVar(&o.address, "broker-address", docker.DefaultAddress, "IP address of the Docker Engine's host to publish the broker's ports on and send traffic to (a remote engine's: DOCKER_HOST=ssh://… or tcp://…)")
	fl.BoolVar(&o.all, "all", false, "run every scenario in the file, in file order")
	fl.StringSliceVar(&o.queueTypes, "queue-types", nil, "matrix: run every mode on each of these queue types (quorum, classic)")
	fl.StringSliceVar(&o.persistence, "persistence", nil, "matrix: run every mode with each of these (persistent, transient)")
	fl.IntVar(&o.repeat, "repeat", 0, "matrix: run each cell this many times (1–100) and summarise min/median/max")
	fl.Uint64Var(&o.seed, "seed", 0, "seed for fault jitter (overrides the scenario's seed; default: the scenario's, else a random one printed in the report)")
	fl.StringVar(&o.summaryFile, "summary-file", "", "also append each scenario's markdown report to this file, e.g. $GITHUB_STEP_SUMMARY")
	fl.DurationVar(&o.bucket, "bucket", metrics.DefaultBucket, "width of the timeline's buckets in result.json and the charts (10ms–1m)")
	o.settingFlags(c)
	addFileFlag(c, g)
	fl.BoolVar(&o.allowCommands, allowCommandsFlag, false, "let scenarios' command steps (action: command) run the programs they name, with your rights; without it such a scenario is refused")
	fl.BoolVar(&o.failOnMissing, "fail-on-missing", false, "fail the verdict (exit 1) when fire-and-forget loses any order without an error (sets expect.max_unconfirmed_missing: 0)")
	addOutputFlag(c, &o.output, outWide, outJSON, outMarkdown)
	o.addImagesFlag(c)
	o.addSplitFlags(c)
	o.addMetricsFlags(c)
	o.addCIFlags(c)
	groupFlags(c, runFlagGroups)
	return c
}

// scenarioFlags are the flags that override a scenario field, with the
// field paths they set (as scenario.Validate names them).
var scenarioFlags = []struct{ flag, field string }{
	{"mode", "load.modes"}, {"messages", "load.messages"}, {"window", "load.window"}, {"image", "broker.image"}, {"images", "broker.image"},
	{"queue-types", "queue.type"}, {"queue-types", "matrix.queue_types"},
	{"persistence", "load.persistent"}, {"persistence", "matrix.persistent"}, {"repeat", "matrix.repeat"},
	{"nodes", "broker.nodes"}, {"containers", "broker.nodes"},
	{"fail-on-missing", "expect.max_unconfirmed_missing"},
	{"rate", "load.rate"}, {"rate", "load.burst"}, {"duration", "load.messages"}, {"size", "load.message_size_bytes"},
	{"publishers", "load.publishers"}, {"publishers", "load.channels_per_connection"},
	{"consumers", "consumers.count"}, {"prefetch", "consumers.prefetch"}, {"prefetch", "consumers.ack_every"},
	{"kill-at", "faults[].published_percent"}, {"kill-at", "faults[].published"}, {"down", "faults[].down"},
	{"queue-type", "queue.type"},
}

// apply sets the overrides of the flags that were set on s, then checks s
// with the loader's own rules (scenario.Validate): an error names the flags
// that caused it. Expectations of modes --mode leaves out are dropped, and
// returned as warnings (also printed on stderr), never silently.
func (o *runOpts) apply(c *cobra.Command, file string, s *scenario.Scenario) ([]string, error) {
	fl := c.Flags()
	if o.bucket < 10*time.Millisecond || o.bucket > time.Minute {
		return nil, fmt.Errorf("--bucket must be within 10ms–1m, got %s", o.bucket)
	}
	if fl.Changed("port") && (o.hostPort <= 0 || o.hostPort > 65535) {
		return nil, fmt.Errorf("--port must be within 1–65535, got %d", o.hostPort)
	}
	if fl.Changed("broker-address") {
		a, err := docker.CheckAddress(o.address)
		if err != nil {
			return nil, fmt.Errorf("--broker-address: %w", err)
		}
		o.address = a
	}
	if err := o.checkContainers(c); err != nil {
		return nil, err
	}
	if err := o.checkURI(c); err != nil {
		return nil, err
	}
	if err := o.checkSplit(c); err != nil {
		return nil, err
	}
	if err := o.set(c, s); err != nil {
		return nil, err
	}
	if err := o.setSettings(c, s); err != nil {
		return nil, err
	}
	if err := o.splitScenario(s); err != nil {
		return nil, err
	}
	if named := o.namedContainers(); named != "" && s.Broker.HasConfig() {
		return nil, fmt.Errorf("%s: scenario %q sets broker.config or broker.advanced_config, which rmqtorture writes into a broker container it creates, before its first start; a container you name keeps its own configuration (run without %s, or configure that broker yourself)", named, s.Name, strings.Fields(named)[0])
	}
	if len(o.containers) > 0 && s.Queue.Type == scenario.Stream {
		return nil, fmt.Errorf("--containers: scenario %q publishes to a stream over the stream protocol (queue.type: stream), whose clients go to the address each node advertises, and the nodes of a cluster you name advertise their own hostnames; rmqtorture runs a stream on a cluster it creates, where each node advertises its published port (run without --containers)", s.Name)
	}
	if err := o.checkLazy(s); err != nil {
		return nil, err
	}
	var warnings []string
	if fl.Changed("mode") {
		warnings = s.UncheckedExpectations()
		for _, w := range warnings {
			fmt.Fprintln(c.ErrOrStderr(), "warning: "+w)
		}
	}
	if o.uri != "" {
		w, err := o.uriScenario(s)
		if err != nil {
			return nil, err
		}
		for _, line := range w {
			fmt.Fprintln(c.ErrOrStderr(), "warning: "+line)
		}
		warnings = append(warnings, w...)
	}
	if w := failOnMissingUnused(o.failOnMissing, s); w != "" {
		fmt.Fprintln(c.ErrOrStderr(), "warning: "+w)
		warnings = append(warnings, w)
	}
	// A "matrix" of one cell is the scenario with that cell's settings: a
	// single --queue-types or --persistence value is applied, not ignored.
	if cells := s.Cells(); len(cells) == 1 {
		*s = *s.ForCell(cells[0])
		s.Matrix.QueueTypes, s.Matrix.Persistent = nil, nil
	}
	if errs := scenario.Validate(file, s); len(errs) > 0 {
		lines := make([]string, len(errs))
		for i, e := range errs {
			lines[i] = fmt.Sprintf("scenario %q: %s: %s", s.Name, e.Path, e.Msg)
			if flags := o.blame(c, e.Path); flags != "" {
				lines[i] = flags + ": " + lines[i]
			}
		}
		return nil, errors.New(strings.Join(lines, "\n"))
	}
	return warnings, nil
}

// set parses the override flags that were set into s, unchecked.
func (o *runOpts) set(c *cobra.Command, s *scenario.Scenario) error {
	fl := c.Flags()
	if fl.Changed("mode") {
		s.Load.Modes = nil
		for _, m := range o.modes {
			s.Load.Modes = append(s.Load.Modes, scenario.Mode(strings.TrimSpace(m)))
		}
	}
	if fl.Changed("messages") {
		s.Load.Messages = o.messages
	}
	if fl.Changed("window") {
		s.Load.Window = o.window
	}
	if fl.Changed("image") {
		if _, err := scenario.ImageRef(o.image); err != nil && strings.TrimSpace(o.image) != "" {
			return fmt.Errorf("--image: %w", err)
		}
		s.Broker.Image = o.image
	}
	if fl.Changed("queue-types") {
		s.Matrix.QueueTypes = nil
		for _, t := range o.queueTypes {
			qt := scenario.QueueType(strings.TrimSpace(t))
			if qt == scenario.Stream {
				// A single value is applied as queue.type below, which
				// would bypass matrix.queue_types' own enum.
				return fmt.Errorf("--queue-types: %q is not a matrix queue type (quorum, classic); a stream scenario sets queue.type: stream", t)
			}
			s.Matrix.QueueTypes = append(s.Matrix.QueueTypes, qt)
		}
	}
	if fl.Changed("persistence") {
		s.Matrix.Persistent = nil
		for _, p := range o.persistence {
			switch strings.TrimSpace(p) {
			case "persistent", "transient":
				s.Matrix.Persistent = append(s.Matrix.Persistent, strings.TrimSpace(p) == "persistent")
			default:
				return fmt.Errorf("--persistence: %q is neither persistent nor transient%s", p, scenario.DidYouMean(strings.TrimSpace(p), []string{"persistent", "transient"}))
			}
		}
	}
	if fl.Changed("nodes") {
		if o.nodes == 0 {
			// broker.nodes 0 reads as unset (1), so the schema cannot see it.
			return errors.New("--nodes must be 1, 3 or 5, got 0")
		}
		s.SetNodes(o.nodes)
	}
	if fl.Changed("containers") {
		s.SetNodes(len(o.containers))
	}
	if o.failOnMissing {
		none := 0
		s.Expect.MaxUnconfirmedMissing = &none
	}
	if fl.Changed("repeat") {
		if o.repeat == 0 {
			// matrix.repeat 0 reads as unset (1), so the schema cannot see it.
			return errors.New("--repeat must be within 1–100, got 0")
		}
		s.Matrix.Repeat = o.repeat
	}
	return nil
}

// checkContainers checks --containers on its own and beside --container
// and --nodes, and trims its names: each a container to attach to as one
// node of a cluster, in node order.
func (o *runOpts) checkContainers(c *cobra.Command) error {
	fl := c.Flags()
	if fl.Changed("container") && fl.Changed("nodes") && o.nodes > 1 {
		return fmt.Errorf("--container %s names one broker and --nodes %d asks for a cluster: name the cluster's containers with --containers a,b,c, or leave --nodes out", o.container, o.nodes)
	}
	if !fl.Changed("containers") {
		return nil
	}
	switch {
	case o.container != "":
		return errors.New("--containers and --container both name the broker: give one (--container for a single broker, --containers for the nodes of a cluster)")
	case fl.Changed("nodes"):
		return errors.New("--containers sets the cluster's size, one node per container named: leave --nodes out")
	}
	if len(o.containers) == 0 {
		return errors.New("--containers needs the names of the cluster's running containers, comma-separated (3 or 5)")
	}
	seen := map[string]bool{}
	for i, name := range o.containers {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return fmt.Errorf("--containers: name %d of %q is empty", i+1, strings.Join(o.containers, ","))
		case seen[name]:
			return fmt.Errorf("--containers: %q named twice: each node is its own container", name)
		}
		seen[name] = true
		o.containers[i] = name
	}
	if len(o.containers) == 1 {
		return fmt.Errorf("--containers %s names one container: the nodes of a cluster are 3 or 5; for a single broker use --container %s", o.containers[0], o.containers[0])
	}
	return nil
}

// namedContainers is the flag and value that name the broker's containers
// ("--container b", "--containers a,b,c"), "" when rmqtorture creates them.
func (o *runOpts) namedContainers() string {
	switch {
	case o.container != "":
		return "--container " + o.container
	case len(o.containers) > 0:
		return "--containers " + strings.Join(o.containers, ",")
	}
	return ""
}

// blame names the flags (with their values) an error at path comes from:
// the flag that set that field, else every override flag that was set (the
// scenario was valid as loaded, so they caused it together).
func (o *runOpts) blame(c *cobra.Command, path string) string {
	var own, all []string
	// faults[2].down is matched as faults[].down: a flag sets a step
	// whatever its index.
	general := faultIndex.ReplaceAllString(path, "faults[]")
	for _, sf := range scenarioFlags {
		f := c.Flags().Lookup(sf.flag)
		if !f.Changed {
			continue
		}
		v := strings.Trim(f.Value.String(), "[]")
		if v == "" {
			v = `""`
		}
		name := "--" + sf.flag + " " + v
		if !slices.Contains(all, name) {
			all = append(all, name)
		}
		if (fieldOf(path, sf.field) || fieldOf(general, sf.field)) && !slices.Contains(own, name) {
			own = append(own, name)
		}
	}
	if len(own) > 0 {
		return strings.Join(own, " ")
	}
	return strings.Join(all, " ")
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (o *runOpts) run(c *cobra.Command, g *globalOpts, names []string) (err error) {
	ctx := c.Context()
	tty := isTerminal(c.ErrOrStderr())
	human := g.logFormat == logHuman
	o.prog = startProgress(c.ErrOrStderr(), !g.quiet && tty && human, !g.quiet && !g.structured(), progressEvery)
	defer o.prog.Stop()
	log := g.runLogger(o.prog.logWriter(c.ErrOrStderr()))
	f, err := g.load()
	if err != nil {
		return err
	}
	if err := perfTestQ(g, f, names); err != nil {
		return err
	}
	// Every scenario and flag is checked before anything is touched.
	runs, versions, groups, err := o.expandNames(c, f, g.file, names)
	if err != nil {
		return err
	}
	if o.split.on() && len(runs) > 1 {
		return usageErr(fmt.Errorf("--load-only and --drain-only run one scenario (the run id names one run's queues), got %d", len(runs)))
	}
	plans, err := o.plan(c, g, runs)
	if err != nil {
		return err
	}

	// Every output and the port are checked before Docker is contacted.
	if err := o.preflight(); err != nil {
		return err
	}
	if err := o.startMetrics(log); err != nil {
		return err
	}
	defer o.stopMetrics()
	// A broker named with --uri is reached over AMQP only: no Docker.
	var cli *docker.Engine
	if o.uri == "" {
		if err := checkDockerEnv(); err != nil {
			return usageErr(err)
		}
		cli, err = docker.Connect(ctx)
		if err != nil {
			return notStarted(ctx, causeErr(CauseDockerUnreachable, err))
		}
		defer cli.Close()
		o.engine = docker.EngineDescription(ctx, cli)
		log.Info("Docker Engine", "host", docker.EngineHost(), "broker_address", o.address, "engine", o.engine)
		sweepBeforeRun(ctx, log, cli)
	}
	if o.container != "" {
		if err := checkContainer(ctx, cli, "--container", o.container); err != nil {
			return notStarted(ctx, err)
		}
	}
	for _, name := range o.containers {
		if err := checkContainer(ctx, cli, "--containers", name); err != nil {
			return notStarted(ctx, err)
		}
	}

	if err := o.haveImages(ctx, log, cli, plans); err != nil {
		return err
	}
	setMemoryLimit(plans)
	if versions {
		o.versions = o.newVersionsRun(c, plans, groups)
		defer func() {
			if ferr := o.versions.finish(ctx.Err() != nil); ferr != nil {
				err = errors.Join(err, ferr)
				return
			}
			err = o.versions.outcome(err)
		}()
	}
	o.json.on = o.output == outJSON && len(plans) > 1 && o.versions == nil
	defer func() {
		if end := o.endJSONArray(c.OutOrStdout()); end != nil {
			err = errors.Join(err, end)
		}
	}()
	worst := CausePass
	for i := range plans {
		if ctx.Err() != nil {
			// Nothing of this scenario started: nothing to report.
			worst = worse(worst, CauseInterrupted)
			break
		}
		cause, err := o.runScenario(ctx, c, g, log, cli, &plans[i], o.warnings[i])
		if err != nil {
			// An earlier scenario's failed verdict outranks this error.
			return causeErr(worse(worst, cause), err)
		}
		worst = worse(worst, cause)
		if ctx.Err() != nil {
			break
		}
	}
	return runOutcome(worst)
}

// plan turns each run into the scenario it will run, with the flags
// applied and checked (exit 2 on any refusal), and keeps each one's
// warnings in o.warnings.
func (o *runOpts) plan(c *cobra.Command, g *globalOpts, runs []planned) ([]scenario.Scenario, error) {
	var plans []scenario.Scenario
	for _, p := range runs {
		sc := planScenario(p.scenario, p.image)
		// apply prints its warnings on stderr; result.json carries them too.
		warnings, err := o.apply(c, g.file, &sc)
		if err != nil {
			return nil, usageErr(err)
		}
		if err := o.checkCommands(c.ErrOrStderr(), g.file, &sc); err != nil {
			return nil, usageErr(err)
		}
		if o.hostPort != 0 && sc.Broker.Nodes > 1 {
			return nil, usageErr(fmt.Errorf("--port %d: scenario %q runs %d nodes, each with its own AMQP port: --port names one broker's; leave it out for a cluster", o.hostPort, sc.Name, sc.Broker.Nodes))
		}
		plans = append(plans, sc)
		o.warnings = append(o.warnings, warnings)
	}
	return plans, nil
}

// haveImages makes sure, when there are several runs, that every image
// is had (pulled if need be) before the first starts: an image missing for
// the third run must not cost the first two their time. One run pulls its
// image as it starts; --container, --containers and --uri use no image.
func (o *runOpts) haveImages(ctx context.Context, log *slog.Logger, cli *docker.Engine, plans []scenario.Scenario) error {
	if cli == nil || len(plans) < 2 || o.container != "" || len(o.containers) > 0 {
		return nil
	}
	seen := map[string]bool{}
	for i := range plans {
		if seen[plans[i].Broker.Image] {
			continue
		}
		seen[plans[i].Broker.Image] = true
		if err := o.ensureImage(ctx, log, cli, &plans[i]); err != nil {
			if errors.Is(err, docker.ErrImageMissing) {
				return notStarted(ctx, causeErr(CauseImageMissing, err))
			}
			return notStarted(ctx, causeErr(CauseOperational, err))
		}
	}
	return nil
}

// notStarted is err, or an interruption when Ctrl-C came before anything
// started (and so caused err).
func notStarted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return causeErr(CauseInterrupted, errors.New("interrupted before the run started: nothing to report"))
	}
	return err
}

// runOutcome is the error run returns for the worst cause of its scenarios
// (each scenario's report gives the reasons).
func runOutcome(worst Cause) error {
	msg := map[Cause]string{
		CauseVerdictFail:    "verdict: fail",
		CauseInterrupted:    "interrupted: partial report written",
		CauseBrokerNotReady: "verdict: inconclusive: the broker never accepted an AMQP login (see the report)",
	}[worst]
	switch {
	case worst == CausePass:
		return nil
	case msg == "":
		msg = "verdict: inconclusive"
	}
	return causeErr(worst, errors.New(msg))
}

// preflight checks, before anything starts, that --port is free (when a
// container is to be created with it) and that --out and --summary-file
// can be written, and so can --metrics-file and --junit.
func (o *runOpts) preflight() error {
	if o.hostPort != 0 && o.namedContainers() == "" {
		if err := checkPortFree(o.address, o.hostPort); err != nil {
			return err
		}
	}
	if err := checkOutDir("--out", o.out); err != nil {
		return err
	}
	if docker.OfficialFor(scenario.DefaultImage, o.officialRegistry) == "" {
		return usageErr(fmt.Errorf("--official-registry %q: not a registry host, e.g. 127.0.0.1:5000 or docker.io", o.officialRegistry))
	}
	if o.summaryFile != "" {
		if err := checkAppendFile("--summary-file", o.summaryFile); err != nil {
			return err
		}
	}
	for _, f := range [][2]string{{"--metrics-file", o.metricsFile}, {"--junit", o.junitFile}} {
		if f[1] != "" {
			if err := checkAppendFile(f[0], f[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkContainer checks that a container named with flag (--container,
// or one of --containers) can be the broker or a node, before anything
// starts.
func checkContainer(ctx context.Context, cli *docker.Engine, flag, name string) error {
	err := docker.CheckAttachable(ctx, cli, name)
	for kind, cause := range map[error]Cause{docker.ErrNoSuchContainer: CauseNoSuchContainer, docker.ErrContainerStopped: CauseContainerStopped, docker.ErrNoAMQPPort: CauseNoAMQPPort} {
		if errors.Is(err, kind) {
			return causeErr(cause, fmt.Errorf("%s %s: %w", flag, name, err))
		}
	}
	if err != nil {
		return opErr(err)
	}
	return nil
}

// stopped reports whether a mode was skipped: the run was interrupted or the
// broker could not be brought back, so later matrix cells would measure nothing.
func stopped(rs []scenario.ModeResult) bool {
	for _, r := range rs {
		if r.NotRun {
			return true
		}
	}
	return false
}

// worseCode ranks exit codes: a failed verdict outranks an error, which
// outranks an interruption, which outranks an inconclusive run; a measured
// loss is never hidden.
func worseCode(a, b int) int {
	rank := map[int]int{ExitPass: 0, ExitInconclusive: 1, ExitInterrupted: 2, ExitUsage: 3, ExitError: 3, ExitFail: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// worse is the worse of two causes by their exit codes (worseCode); on a
// tie, the first.
func worse(a, b Cause) Cause {
	if worseCode(codeOf(a), codeOf(b)) != codeOf(a) {
		return b
	}
	return a
}

// runScenario provisions the broker, runs every mode, and always writes the
// report; it returns the scenario's cause (and so exit code), and an error
// only when no broker could be had at all or the report could not be
// written. A second interrupt writes what is known and removes the
// container meanwhile (see interrupt.go).
func (o *runOpts) runScenario(ctx context.Context, c *cobra.Command, g *globalOpts, log *slog.Logger, cli *docker.Engine, s *scenario.Scenario, warnings []string) (Cause, error) {
	runID := newRunID()
	part := o.partOf(s)
	if part != nil {
		runID = part.RunID
	}
	seed := o.scenarioSeed(c, s)
	res := &scenario.Result{Seed: seed,
		SchemaVersion: scenario.SchemaVersion, Tool: toolVersion(), Client: clientVersion(),
		Scenario: s.Name, Description: strings.Join(strings.Fields(s.Description), " "), File: g.file,
		Command: "rmqtorture " + strings.Join(os.Args[1:], " "), RunID: runID, Image: s.Broker.Image, Engine: o.engine,
		QueueType: s.Queue.Type, Topology: s.Topology(), Messages: s.Load.Messages, StartedAt: time.Now(), Warnings: warnings,
	}
	res.LoadPart = part
	dir := filepath.Join(o.out, fmt.Sprintf("%s-%s-%s%s", s.Name, res.StartedAt.UTC().Format("20060102T150405Z"), runID, partDir(part)))
	o.lastDir, o.lastResult = dir, res
	log = log.With("scenario", s.Name, "run", runID)

	sr := o.watch(ctx, c, log, s, res, dir)
	defer sr.stop()
	o.prog.startScenario(modesToRun(s), s.Load.Messages)
	o.live.startScenario(s.Name, runID)
	o.prog.brokerStarting(s.Broker.Image, o.brokerNamed(), s.Broker.Nodes)
	ut, cause, err := o.provision(ctx, c, log, cli, s, res, dir, sr)
	if ut == nil {
		return cause, err
	}
	o.prog.brokerReady(res.BrokerVersion)
	// Expectations stated for this broker's version (expect.versions).
	s = applyVersionScope(c, s, res)
	runner := &engine.Runner{
		Ports:        o.ports(runID, s, ut),
		Traffic:      ut.traffic(log),
		Log:          log,
		RunID:        runID,
		DeleteQueues: (!ut.owned || !o.keep) && (part == nil || part.Drain), // the drain deletes a split run's queues
		Part:         part,
		Seed:         seed,
		Bucket:       o.bucket,
		OnBurst:      o.onBurst,
		History:      historySink(dir),
		OnModeDone:   o.prog.modeDone(o.live.modeDone(sr.modeDone)),
		// What some queue settings do depends on the broker's version.
		BrokerVersion: res.BrokerVersion,
	}
	res.Warnings = append(res.Warnings, settingWarnings(c, s, res.BrokerVersion)...)
	if ut.streamAddr != nil || ut.streamAddrs != nil {
		runner.StreamTraffic = &stream.Traffic{Traffic: ut.traffic(log), Addr: ut.streamAddr, Addrs: ut.streamAddrs}
	}
	runCells(ctx, log, runner, s, res, runner.OnModeDone)
	scanBrokerLog(ctx, log, ut.logs, res)
	if o.versions != nil {
		recordFeatures(ctx, log, ut, res)
	}
	return o.finish(ctx, c, log, dir, res, sr)
}

// ports are the fault ports of a run on ut: the broker's, and the
// Commands port when the scenario has command steps (allowed by then).
func (o *runOpts) ports(runID string, s *scenario.Scenario, ut *underTest) engine.Ports {
	p := engine.PortsOf(ut.broker)
	if s.RunsCommands() {
		p.Commands = commands(runID, s, ut)
	}
	return p
}

// settingWarnings names the queue settings that will not do what their
// name says on this broker (scenario.SettingWarnings), also on stderr.
func settingWarnings(c *cobra.Command, s *scenario.Scenario, version string) []string {
	w := s.SettingWarnings(version)
	for _, line := range w {
		fmt.Fprintln(c.ErrOrStderr(), "warning: "+line)
	}
	return w
}

// scenarioSeed is the run's one seed, from which every random choice comes:
// --seed if given, else the scenario's seed, else a random one. It is
// reported so the run can be replayed with --seed.
func (o *runOpts) scenarioSeed(c *cobra.Command, s *scenario.Scenario) uint64 {
	seed := mrand.Uint64()
	if s.Seed != nil {
		seed = *s.Seed
	}
	if c.Flags().Changed("seed") {
		seed = o.seed
	}
	return seed
}

// runCells runs the scenario's modes into res.Modes: once, or once per
// matrix cell. After a cell that was interrupted or lost the broker, the
// remaining cells' modes are recorded as not run (and handed to done, as
// the runner hands it the modes it ran).
func runCells(ctx context.Context, log *slog.Logger, runner *engine.Runner, s *scenario.Scenario, res *scenario.Result, done func(scenario.ModeResult)) {
	for _, cell := range s.Cells() {
		if !s.IsMatrix() {
			res.Modes = runner.RunModes(ctx, s, s.Load.Modes)
			break
		}
		c := cell
		runner.Cell = &c
		sc := s.ForCell(c)
		if stopped(res.Modes) {
			for _, m := range sc.Load.Modes {
				res.Modes = append(res.Modes, scenario.ModeResult{Mode: m, Cell: &c, NotRun: true,
					Verdict: scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{"not run: an earlier cell was interrupted or lost the broker"}}})
				done(res.Modes[len(res.Modes)-1])
			}
			continue
		}
		log.Info("matrix cell", "queue_type", c.QueueType, "persistent", c.Persistent, "repeat", c.Repeat)
		res.Modes = append(res.Modes, runner.RunModes(ctx, sc, sc.Load.Modes)...)
	}
}

// finish judges the whole run (an interrupted run that would pass is
// inconclusive), writes its report into dir and returns the scenario's
// cause: fail, else interrupted, else inconclusive, else pass. A Ctrl-C
// that comes while the report is being written marks it interrupted and
// writes it again. The error is set only when the report could not be
// written. When a second Ctrl-C wrote the report first, finish writes
// nothing.
func (o *runOpts) finish(ctx context.Context, c *cobra.Command, log *slog.Logger, dir string, res *scenario.Result, sr *scenarioRun) (Cause, error) {
	res.Verdict = scenario.Overall(res.Modes)
	if ctx.Err() != nil {
		markInterrupted(res, "interrupted before the run completed")
	}
	o.prog.verdict(res)
	wrote, err := sr.writeOnce(func() error {
		res.DurationMS = float64(time.Since(res.StartedAt).Milliseconds())
		log.Info("writing the report", "dir", dir)
		if err := o.write(c, log, dir, res); err != nil {
			return err
		}
		if ctx.Err() == nil || res.Interrupted {
			return nil
		}
		markInterrupted(res, "interrupted while the report was being written (every mode had finished)")
		log.Warn("interrupted while the report was being written: writing it again, marked interrupted", "dir", dir)
		return o.writeReport(dir, res)
	})
	switch {
	case !wrote:
		return sr.abortCause, nil
	case err != nil:
		return CauseWriteFailed, fmt.Errorf("the run finished (verdict %s) but its report could not be written: %w", res.Verdict.Status, err)
	case res.Verdict.Status == scenario.Fail:
		return CauseVerdictFail, nil
	case res.Interrupted:
		return CauseInterrupted, nil
	case res.Verdict.Status == scenario.Inconclusive:
		return CauseInconclusive, nil
	}
	return CausePass, nil
}

// markInterrupted records a Ctrl-C in res: a verdict that would pass is
// inconclusive, for reason.
func markInterrupted(res *scenario.Result, reason string) {
	res.Interrupted = true
	if res.Verdict.Status == scenario.Pass {
		res.Verdict = scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{reason}}
	}
}

// write prints the result on stdout in the -o format (by default the
// headline and a table that fits 100 columns) and writes result.json and
// report.md atomically into dir. The result is printed first, so what was
// measured reaches stdout even when the files cannot be written; a failure
// to print it does not stop the files, but write returns it (with the
// first file error, if any), so no failed write goes unreported. The
// paths of the files follow on stdout, or on stderr with -o json or -o
// markdown, whose stdout holds the document alone.
func (o *runOpts) write(c *cobra.Command, log *slog.Logger, dir string, res *scenario.Result) error {
	out := c.OutOrStdout()
	redact.Strings(res) // no URL password or terminal code reaches stdout or a file
	o.prog.hide()
	if o.versions != nil {
		return o.writeRun(c, dir, res) // stdout holds the versions report
	}
	var stdoutErr error
	if o.printed > 0 && o.output != outJSON {
		// A blank line between scenarios: each headline starts a block.
		if _, err := fmt.Fprintln(out); err != nil {
			stdoutErr = fmt.Errorf("print the result: %w", err)
		}
	}
	o.printed++
	render, paths := reports.Summary, out
	switch o.output {
	case outWide:
		render = reports.Table
	case outJSON:
		render, paths = o.jsonElement, c.ErrOrStderr()
	case outMarkdown:
		render, paths = reports.Markdown, c.ErrOrStderr()
	}
	if err := render(out, res); err != nil {
		log.Error("print the result", "err", err)
		stdoutErr = fmt.Errorf("print the result: %w", err)
	}
	// The hint points at columns the summary left out: none when no mode
	// ran (the broker never answered, the run was stopped first).
	if o.output == outDefault && stdoutErr == nil && slices.ContainsFunc(res.Modes, func(m scenario.ModeResult) bool { return !m.NotRun }) {
		if _, err := fmt.Fprintln(out, "(every column: rmqtorture report RESULT.json -o wide, or run with -o wide)"); err != nil {
			stdoutErr = fmt.Errorf("print the result: %w", err)
		}
	}
	if err := o.writeFiles(dir, res); err != nil {
		return errors.Join(err, stdoutErr)
	}
	if o.output == outJSON || o.output == outMarkdown {
		// stdout holds the document alone: the verdict and its reasons
		// reach a CI log on stderr, beside the paths.
		if _, err := fmt.Fprintln(paths, verdictLine(res)); err != nil && stdoutErr == nil {
			stdoutErr = fmt.Errorf("print the verdict: %w", err)
		}
	}
	if err := annotate(paths, res); err != nil && stdoutErr == nil {
		stdoutErr = fmt.Errorf("print the annotations: %w", err)
	}
	if _, err := fmt.Fprintf(paths, "report: %s\nresult: %s\n", filepath.Join(dir, "report.md"), filepath.Join(dir, "result.json")); err != nil && stdoutErr == nil {
		stdoutErr = fmt.Errorf("print the report paths: %w", err)
	}
	return stdoutErr
}

// verdictLine is "verdict: SCENARIO: FAIL: reason; reason" (no reasons:
// none after the status).
func verdictLine(res *scenario.Result) string {
	line := fmt.Sprintf("verdict: %s: %s", res.Scenario, strings.ToUpper(string(res.Verdict.Status)))
	if len(res.Verdict.Reasons) > 0 {
		line += ": " + strings.Join(res.Verdict.Reasons, "; ")
	}
	return line
}

// writeFiles writes result.json, report.md and the charts atomically into
// dir, and appends the markdown to --summary-file.
func (o *runOpts) writeFiles(dir string, res *scenario.Result) error {
	if err := o.writeReport(dir, res); err != nil {
		return err
	}
	if err := o.scenarioEnded(res); err != nil {
		return err
	}
	if o.summaryFile != "" {
		if err := appendSummary(o.summaryFile, res); err != nil {
			return err
		}
	}
	return nil
}

// writeReport writes result.json, report.md, timeline.csv and the charts
// atomically into dir.
func (o *runOpts) writeReport(dir string, res *scenario.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report folder: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, "result.json"), func(f *os.File) error { return reports.JSON(f, res) }); err != nil {
		return fmt.Errorf("write result.json: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, "report.md"), func(f *os.File) error { return reports.Markdown(f, res) }); err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, "timeline.csv"), func(f *os.File) error { return reports.TimelineCSV(f, res) }); err != nil {
		return fmt.Errorf("write timeline.csv: %w", err)
	}
	return writeCharts(dir, res)
}

// writeAtomic writes path through a temporary file and a rename, so a reader
// never sees half a report: when render (or closing the file) fails, the
// temporary file is removed and path is left as it was.
func writeAtomic(path string, render func(*os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600; a report is for everyone to read.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := render(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
