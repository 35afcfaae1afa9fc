package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/broker/amqp"
	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/redact"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// underTest is the broker a run acts on: one container (created, or named
// with --container) or the nodes of a cluster (created with broker.nodes /
// --nodes, or named with --containers). The run sees it through the fault
// ports and these few facts.
type underTest struct {
	broker engine.Broker
	name   string // container name, or the cluster's ("rmqt-RUN (3 nodes)")
	image  string
	owned  bool     // created by this run: removed afterwards unless --keep
	nodes  []string // a cluster's node containers, node 1 first
	// url is the (first) node's AMQP URL; urls, set for a cluster, every
	// node's in node order. Both carry credentials: print redact.URL.
	url  func() string
	urls func() []string
	// addr says where AMQP is awaited, for logs and messages (no
	// credentials).
	addr string
	// shown is the URL --uri named, password redacted ("" for a
	// container): see uri.go.
	shown string
	// streamAddr is the stream port's address; streamAddrs, set for a
	// cluster rmqtorture created instead, every node's (both nil: no
	// stream traffic).
	streamAddr  func() string
	streamAddrs func() []string
	// ready waits until the broker accepts AMQP logins (every node, and the
	// cluster formed) or timeout passes.
	ready   func(ctx context.Context, timeout time.Duration) error
	version func() string
	remove  func(ctx context.Context) error
	logs    logScanner
	// features lists the broker's feature flags and deprecated features
	// (nil: --uri, no CLI to ask).
	features func(ctx context.Context) (*scenario.BrokerFeatures, error)
}

// traffic is the AMQP traffic against the broker, failing over across a
// cluster's nodes.
func (u *underTest) traffic(log *slog.Logger) *amqp.Traffic {
	return &amqp.Traffic{URL: u.url, URLs: u.urls, Log: log}
}

func single(ctr *docker.Container) *underTest {
	return &underTest{broker: ctr, name: ctr.Name, image: ctr.Image, owned: ctr.Owned, url: ctr.URL, addr: ctr.Addr(),
		streamAddr: ctr.StreamAddr, version: ctr.ServerVersion, remove: ctr.Remove, logs: ctr, features: ctr.Features,
		ready: func(ctx context.Context, timeout time.Duration) error {
			return ctr.WaitReady(ctx, scenario.BrokerTarget(), timeout)
		}}
}

func cluster(c *docker.Cluster) *underTest {
	u := &underTest{broker: c, name: c.Name(), image: c.Image, owned: c.Owned(), url: c.URL, urls: c.URLs, addr: c.Addrs(),
		version: c.ServerVersion, remove: c.Remove, logs: c, features: c.Features,
		// Every node accepting logins, then the cluster formed, each within
		// the ready timeout: nodes booting together on a busy machine take
		// longer than one broker (measured 20-41 s to form 3 nodes here).
		ready: func(ctx context.Context, timeout time.Duration) error {
			if err := c.WaitReady(ctx, scenario.Target{Kind: scenario.TargetAll}, timeout); err != nil {
				return err
			}
			return c.WaitFormed(ctx, timeout)
		}}
	for _, n := range c.Nodes() {
		u.nodes = append(u.nodes, n.Name)
	}
	return u
}

// provision creates the broker (or attaches to the containers named) and
// waits until it accepts AMQP (a cluster: every node, formed into one
// cluster), recording the container(s), image and broker version in res
// and the release in sr. When no ready broker could be had, it returns nil
// and the cause and error the scenario returns: a broker that never became
// ready (or Ctrl-C while waiting for it) is first written to dir as an
// inconclusive (interrupted) result.
func (o *runOpts) provision(ctx context.Context, c *cobra.Command, log *slog.Logger, cli *docker.Engine, s *scenario.Scenario, res *scenario.Result, dir string, sr *scenarioRun) (*underTest, Cause, error) {
	ut, release, err := o.createOrAttach(ctx, log, cli, s, res.RunID)
	if err != nil {
		sr.provisionedWith(release, res)
		if errors.Is(err, docker.ErrImageMissing) {
			return nil, CauseImageMissing, err
		}
		if errors.Is(err, context.Canceled) { // Ctrl-C while pulling the image: nothing created
			return nil, CauseInterrupted, err
		}
		return nil, CauseOperational, err
	}
	res.Container, res.Image, res.NodeContainers = ut.name, ut.image, ut.nodes
	markExternal(ut, res, len(s.Faults) > 0)
	if len(ut.nodes) > 0 {
		res.Nodes = len(ut.nodes)
	}
	if ut.owned {
		res.BrokerConfig, res.BrokerAdvancedConfig = s.Broker.Config, s.Broker.AdvancedConfig
	}
	sr.provisionedWith(release, res)
	log.Info("waiting for AMQP", "addr", ut.addr, "timeout", s.Broker.ReadyTimeout.D())
	if err := ut.ready(ctx, s.Broker.ReadyTimeout.D()); err != nil {
		cause, reason := CauseBrokerNotReady, err.Error()
		if ctx.Err() != nil {
			cause, reason = CauseInterrupted, fmt.Sprintf("interrupted while waiting for the broker to accept an AMQP login on %s", ut.addr)
			res.Interrupted = true
		}
		res.Error = reason
		res.Verdict = scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{reason}}
		res.DurationMS = float64(time.Since(res.StartedAt).Milliseconds())
		if _, err := sr.writeOnce(func() error { return o.write(c, log, dir, res) }); err != nil {
			return nil, CauseWriteFailed, fmt.Errorf("%s; and its report could not be written: %w", reason, err)
		}
		log.Error("no broker to run against", "err", reason)
		return nil, cause, nil
	}
	res.BrokerVersion = ut.version()
	sr.setHeader(res)
	return ut, CausePass, nil
}

// createOrAttach creates the run's broker container or cluster, or
// attaches to --container / --containers. Creation ignores Ctrl-C: an
// interrupt inside ContainerCreate could otherwise leave a container that
// nobody removes. release, never nil, removes what this run created (also
// ignoring Ctrl-C) unless --keep, in which case it logs where it is kept.
func (o *runOpts) createOrAttach(ctx context.Context, log *slog.Logger, cli *docker.Engine, s *scenario.Scenario, runID string) (*underTest, func(), error) {
	if o.reuse != nil {
		// explore's broker, created for an earlier trial: its owner
		// removes it.
		return o.reuse, func() {}, nil
	}
	if o.uri == "" && len(o.containers) == 0 && o.container == "" {
		// Pulled before anything is created, and interruptible: a pull
		// can take longer than creation's own bound.
		if err := o.ensureImage(ctx, log, cli, s); err != nil {
			return nil, func() {}, err
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	var ut *underTest
	var err error
	switch {
	case o.uri != "":
		ut, err = o.external()
	case len(o.containers) > 0:
		var c *docker.Cluster
		if c, err = docker.AttachCluster(cctx, cli, log, o.containers, o.address); c != nil {
			ut = cluster(c)
		}
	case o.container != "":
		var ctr *docker.Container
		if ctr, err = docker.Attach(cctx, cli, log, o.container, o.address); ctr != nil {
			ut = single(ctr)
		}
	case s.Broker.Nodes > 1:
		var c *docker.Cluster
		c, err = docker.CreateCluster(cctx, cli, log, docker.ClusterOptions{Image: s.Broker.Image, RunID: runID, Nodes: s.Broker.Nodes, Keep: o.keep, Address: o.address,
			Config: s.Broker.Config, AdvancedConfig: s.Broker.AdvancedConfig, LazyFS: s.Broker.Filesystem == scenario.LazyFilesystem,
			Streams: s.Queue.Type == scenario.Stream})
		if c != nil {
			ut = cluster(c)
			ut.streamAddrs = c.StreamAddrs
		}
	default:
		var ctr *docker.Container
		ctr, err = docker.Create(cctx, cli, log, docker.CreateOptions{Image: s.Broker.Image, RunID: runID, HostPort: o.hostPort, Keep: o.keep, Address: o.address,
			Config: s.Broker.Config, AdvancedConfig: s.Broker.AdvancedConfig, Streams: s.Queue.Type == scenario.Stream,
			LazyFS: s.Broker.Filesystem == scenario.LazyFilesystem})
		if ctr != nil {
			ut = single(ctr)
		}
	}
	release := func() {}
	if ut != nil && o.keepBroker {
		// explore keeps it for the next trial and removes it itself.
		o.created = ut
		return ut, release, err
	}
	if ut != nil && !o.keep {
		release = func() {
			// Removal ignores Ctrl-C: a run never leaves its containers behind.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
			defer cancel()
			if err := ut.remove(rctx); err != nil {
				log.Error("remove broker", "err", err)
			}
		}
	} else if ut != nil && ut.owned {
		name, url, what := ut.name, redact.URL(ut.url()), "keeping broker container"
		if len(ut.nodes) > 0 {
			what = "keeping broker cluster"
		}
		release = func() { log.Info(what, "name", name, "amqp", url); o.prog.note(phaseKept(name, url)) }
	}
	return ut, release, err
}

// checkLazy refuses, before anything starts, a broker.filesystem: lazy
// that this run cannot mount: on a broker rmqtorture does not create
// (--uri, --container, --containers), on an engine that cannot see this
// host's mounts, or kept past the process that serves the filesystem.
func (o *runOpts) checkLazy(s *scenario.Scenario) error {
	if s.Broker.Filesystem != scenario.LazyFilesystem {
		return nil
	}
	const what = "broker.filesystem: lazy puts the data directory of a broker container rmqtorture creates on a filesystem that forgets what was not synced"
	named := o.namedContainers()
	switch {
	case o.uri != "":
		return fmt.Errorf("--uri: scenario %q: %s; the broker --uri names is not one (run without --uri)", s.Name, what)
	case named != "":
		return fmt.Errorf("%s: scenario %q: %s; a container you name keeps its own data directory (run without %s)", named, s.Name, what, strings.Fields(named)[0])
	case o.keep:
		return fmt.Errorf("--keep: scenario %q: %s, served by this rmqtorture process: the broker cannot outlive it (run without --keep)", s.Name, what)
	case !docker.EngineOnThisHost():
		return fmt.Errorf("scenario %q: %s, mounted on this host; the Docker Engine at %s cannot see it (run against the local engine's unix socket)", s.Name, what, docker.EngineHost())
	}
	return nil
}
