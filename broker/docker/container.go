// Package docker is the broker layer's Docker side: the RabbitMQ
// container's lifecycle and faults through the Docker Engine API, clusters
// and their networks, exec, images and engines. It speaks AMQP only to
// wait for a broker's login, read its version and delete or purge a queue
// for the operator (broker/internal/amqpx).
package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/redact"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Labels put on every container rmqtorture creates. Faults and cleanup act
// only on containers that carry LabelManaged, or on the one container a user
// names explicitly.
const (
	LabelManaged = "org.rmqtorture.managed" // "true"
	LabelRun     = "org.rmqtorture.run"     // the run id
	LabelPID     = "org.rmqtorture.pid"     // pid of the rmqtorture process that created it
)

// amqpPort is the broker's AMQP 0.9.1 listener inside the container.
const amqpPort = nat.Port("5672/tcp")

// ErrImageMissing means the broker image is not in the local engine.
var ErrImageMissing = errors.New("broker image missing")

// Engine is a connection to the Docker Engine API (or Podman's compatible
// API) that Connect returns and every function of this package that acts
// on containers takes: callers outside broker/ hold it without importing
// the Docker client themselves.
type Engine = client.Client

// Connect returns a client for the engine DOCKER_HOST names (unix://,
// tcp:// with DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, or ssh://), or else
// the Docker CLI context DOCKER_CONTEXT or `docker context use` chose (see
// resolveEngine and dockerEngine.clientOpts), negotiating the API version: the Go client defaults to API
// 1.51 while e.g. Debian's docker.io 20.10 engine speaks 1.41 and Podman's
// compatible API 1.41 too (BROKER-FACTS.md). It pings the engine so an
// unreachable one fails here, clearly; errors name DOCKER_HOST with any
// password masked.
func Connect(ctx context.Context) (*Engine, error) {
	e := resolveEngine()
	opts, err := e.clientOpts()
	if err != nil {
		return nil, err
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("create Docker client for %s: %w", e, masked{err})
	}
	// An ssh:// engine starts ssh and the remote docker CLI first.
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("cannot reach the Docker Engine at %s: %s (is the daemon running, and DOCKER_HOST or the Docker context right? rmqtorture needs it to run and kill the broker)", e, masked{err})
	}
	cli.NegotiateAPIVersion(ctx)
	return cli, nil
}

// Container is the RabbitMQ broker under test: one rmqtorture created (Owned)
// or one the user named (attached). Its AMQP port is published on its
// host address (127.0.0.1 unless the user names another).
type Container struct {
	cli *client.Client
	log *slog.Logger
	// address is the host IP its ports are published on and clients dial
	// ("": DefaultAddress).
	address  string
	ID       string
	Name     string
	Image    string
	Owned    bool         // created and labelled by this run; removed by Remove
	hostPort atomic.Int64 // read by publishers while Start may re-read it
	runID    string
	// watermark is the vm_memory_high_watermark before a memory alarm, as an
	// Erlang term.
	watermark string
	// networks the broker was disconnected from, for Reconnect, and the
	// aliases it had on each: a cluster's nodes find each other by them.
	networks []string
	aliases  map[string][]string
	// attached is set on a container the user named: the faults' changes
	// to undo should this process die first (state.go).
	attached *attachment
	// tty: the container runs with a terminal, so its log is one raw
	// stream rather than stdout and stderr multiplexed.
	tty bool
	// diskLimit is the disk free limit before a disk alarm, in bytes.
	diskLimit string
	// streamHostPort is the published stream port (0: none; see streamport.go).
	streamHostPort atomic.Int64
	// lazy is the lazy filesystem holding its data directory (nil: the
	// container's own; see lazy.go).
	lazy *lazyData
}

// CreateOptions configure a new broker container.
type CreateOptions struct {
	Image string
	RunID string
	// Address is the IP address of the engine's host to publish ports on,
	// and the one clients dial ("": DefaultAddress, 127.0.0.1); see
	// CheckAddress. With a remote engine (DOCKER_HOST=ssh://…, tcp://…)
	// it is that host's address.
	Address string
	// HostPort is the port to publish AMQP on; 0 picks a free one.
	// It is fixed at creation so it stays the same when the container starts
	// again (an ephemeral binding changes on every start).
	HostPort int
	// Keep labels the container as kept (--keep): cleanup leaves it unless
	// named by its run, and an exit at once does not remove it.
	Keep bool
	// Config (rabbitmq.conf keys) and AdvancedConfig (rabbit application
	// keys) are written into the container before its first start; nil:
	// the image's own configuration only.
	Config         map[string]string
	AdvancedConfig map[string]int
	// Streams enables the stream plugin and publishes its port (see
	// enableStreams in streamport.go).
	Streams bool
	// LazyFS puts the data directory on a lazy filesystem mounted here
	// (broker.filesystem: lazy, for power-loss; lazy.go): the engine must
	// run on this host, and the container cannot be kept.
	LazyFS bool
}

// Create creates and starts a labelled broker container from opts.Image with a
// fixed hostname (so its node name rabbit@HOST and its data survive a
// restart) and AMQP published on opts.Address only. It fails with ErrImageMissing
// and a hint when the image is not present.
func Create(ctx context.Context, cli *client.Client, log *slog.Logger, opts CreateOptions) (*Container, error) {
	if err := imagePresent(ctx, cli, opts.Image); err != nil {
		return nil, err
	}
	port := opts.HostPort
	if port == 0 {
		p, err := freePort(opts.Address)
		if err != nil {
			return nil, err
		}
		port = p
	}
	name := "rmqt-" + opts.RunID
	cfg := &container.Config{
		Image:        opts.Image,
		Hostname:     name,
		ExposedPorts: nat.PortSet{amqpPort: {}}, // without it PortBindings is silently ignored on API 1.41
		Labels:       Labels(opts.RunID, opts.Keep),
	}
	host := &container.HostConfig{
		PortBindings: nat.PortMap{amqpPort: {{HostIP: hostIP(opts.Address), HostPort: strconv.Itoa(port)}}},
	}
	sport, err := enableStreams(opts.Streams, opts.Address, cfg, host)
	if err != nil {
		return nil, err
	}
	lazy, err := mountLazy(ctx, cli, opts.LazyFS, opts.Keep, opts.Image, opts.RunID, name, host)
	if err != nil {
		return nil, err
	}
	created, err := cli.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		_ = lazy.remove()
		return nil, fmt.Errorf("create broker container %q from %q: %w", name, opts.Image, err)
	}
	c := &Container{cli: cli, log: log, address: opts.Address, ID: created.ID, Name: name, Image: opts.Image, Owned: true, runID: opts.RunID, lazy: lazy}
	if !opts.Keep {
		track(c)
	}
	c.hostPort.Store(int64(port))
	c.streamHostPort.Store(int64(sport))
	// Labels cannot change after creation and every later call goes by ID, so
	// one check here covers every kill, start and remove of this container.
	if _, err := c.guard(ctx); err != nil {
		return c, err
	}
	if err := c.writeConfig(ctx, opts.Config, opts.AdvancedConfig); err != nil {
		return c, err
	}
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		return c, fmt.Errorf("start broker container %q: %w", name, err)
	}
	log.Info("broker container started", "name", name, "image", opts.Image, "amqp", c.Addr())
	return c, nil
}

// buildCommand is the command that builds image when it is one of the
// project's own (rmqtorture/rabbitmq:<major.minor>-<suite>, suite
// bookworm, trixie or forky): "scripts/build-broker-image.sh forky"; for
// any other image the script's name alone.
func buildCommand(image string) string {
	const script = "scripts/build-broker-image.sh"
	tag, ok := strings.CutPrefix(image, ownImagePath+"rabbitmq:")
	if !ok {
		return script
	}
	_, suite, _ := strings.Cut(tag, "-")
	switch suite {
	case "bookworm", "trixie", "forky":
		return script + " " + suite
	}
	return script
}

// imagePresent fails with ErrImageMissing and a hint when image is not in
// the local engine.
func imagePresent(ctx context.Context, cli *client.Client, image string) error {
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		if client.IsErrNotFound(err) {
			return fmt.Errorf("%w: %q is not in the local Docker Engine; build it with %s (no registry needed), or pull an image such as rabbitmq:4 and pass --image", ErrImageMissing, image, buildCommand(image))
		}
		return fmt.Errorf("inspect image %q: %w", image, err)
	}
	return nil
}

// Attach uses a running container the user named as the broker. rmqtorture
// will kill and start it (the user asked for that by naming it) but never
// removes it. Its AMQP port 5672/tcp must be published on address (the
// engine host's IP that clients dial; "": DefaultAddress) or on every
// address.
func Attach(ctx context.Context, cli *client.Client, log *slog.Logger, nameOrID, address string) (*Container, error) {
	c := &Container{cli: cli, log: log, address: address, Name: strings.TrimPrefix(nameOrID, "/"), attached: &attachment{warned: map[string]bool{}}}
	info, err := cli.ContainerInspect(ctx, nameOrID)
	if err != nil {
		return nil, fmt.Errorf("inspect container %q: %w", nameOrID, err)
	}
	c.ID, c.Image, c.tty = info.ID, info.Config.Image, info.Config.Tty
	if info.State == nil || !info.State.Running {
		return nil, fmt.Errorf("container %q is not running", nameOrID)
	}
	if err := c.readPort(info); err != nil {
		return nil, err
	}
	trackAttached(c)
	return c, nil
}

func (c *Container) readPort(info container.InspectResponse) error {
	if info.NetworkSettings == nil {
		return fmt.Errorf("container %q has no network settings", c.Name)
	}
	c.readStreamPort(info)
	for _, b := range info.NetworkSettings.Ports[amqpPort] {
		if p, err := strconv.Atoi(b.HostPort); err == nil && reachableOn(b.HostIP, c.address) {
			c.hostPort.Store(int64(p))
			return nil
		}
	}
	return fmt.Errorf("container %q does not publish 5672/tcp on %s; publish it, e.g. -p %s:5672:5672", c.Name, hostIP(c.address), hostIP(c.address))
}

// reachableOn reports whether a port published on bound (a binding's
// HostIP) can be dialled on address: bound is that address, or every
// address ("", 0.0.0.0, ::).
func reachableOn(bound, address string) bool {
	switch bound {
	case "", "0.0.0.0", "::":
		return true
	}
	return bound == hostIP(address)
}

// Addr is the broker's AMQP address: its host address (127.0.0.1 unless
// the user named another) and published port.
func (c *Container) Addr() string {
	return net.JoinHostPort(hostIP(c.address), strconv.FormatInt(c.hostPort.Load(), 10))
}

// URL is the AMQP URL of the broker (guest/guest on the default vhost). It
// carries the password: print redact.URL(URL()).
func (c *Container) URL() string { return "amqp://guest:guest@" + c.Addr() + "/" }

// guard re-reads the container and refuses to act on one that is neither
// labelled as this run's nor the one the user attached to.
func (c *Container) guard(ctx context.Context) (container.InspectResponse, error) {
	info, err := c.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return info, fmt.Errorf("inspect container %q: %w", c.Name, err)
	}
	if c.Owned && (info.Config == nil || info.Config.Labels[LabelManaged] != "true" || info.Config.Labels[LabelRun] != c.runID) {
		return info, fmt.Errorf("refusing to touch container %q: it does not carry this run's %s label", c.Name, LabelRun)
	}
	return info, nil
}

// Kill delivers signal (a name such as "SIGKILL") to the container. It goes
// straight to the API (the container's identity was checked when it was
// created or attached): every millisecond between trigger and kill is
// publishing the scenario did not plan.
func (c *Container) Kill(ctx context.Context, target scenario.Target, signal string) error {
	if err := single(target); err != nil {
		return err
	}
	if err := c.alter("killed ("+signal+") and started again", func(r *Restore) { r.Start = true }); err != nil {
		return err
	}
	if err := c.cli.ContainerKill(ctx, c.ID, signal); err != nil {
		return fmt.Errorf("kill container %q with %s: %w", c.Name, signal, err)
	}
	c.log.Info("broker killed", "container", c.Name, "signal", signal)
	return nil
}

// Stop stops the broker gracefully: SIGTERM, then SIGKILL after grace (the
// node closes client connections with 320 CONNECTION_FORCED, ~1.4 s here).
func (c *Container) Stop(ctx context.Context, target scenario.Target, grace time.Duration) error {
	if err := single(target); err != nil {
		return err
	}
	if err := c.alter("stopped and started again", func(r *Restore) { r.Start = true }); err != nil {
		return err
	}
	secs := int(grace.Round(time.Second) / time.Second)
	if err := c.cli.ContainerStop(ctx, c.ID, container.StopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("stop container %q: %w", c.Name, err)
	}
	return nil
}

// Restart stops the broker gracefully (SIGKILL after grace) and starts it.
func (c *Container) Restart(ctx context.Context, target scenario.Target, grace time.Duration) error {
	if err := single(target); err != nil {
		return err
	}
	if err := c.alter("restarted", func(r *Restore) { r.Start = true }); err != nil {
		return err
	}
	secs := int(grace.Round(time.Second) / time.Second)
	if err := c.cli.ContainerRestart(ctx, c.ID, container.StopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("restart container %q: %w", c.Name, err)
	}
	c.undone(func(r *Restore) { r.Start = false })
	return c.rereadPort(ctx)
}

// Pause freezes every process of the broker (cgroup freezer): connections
// stay open and hang, new TCP connects succeed but the AMQP handshake does
// not.
func (c *Container) Pause(ctx context.Context, target scenario.Target) error {
	if err := single(target); err != nil {
		return err
	}
	if err := c.alter("paused and unpaused", func(r *Restore) { r.Unpause = true }); err != nil {
		return err
	}
	if err := pauseRetrying(ctx, c.cli, c.ID, c.log); err != nil {
		return fmt.Errorf("pause container %q: %w", c.Name, err)
	}
	return nil
}

// freezeAttempts and freezeRetry bound the tries of a pause that runc gave
// up on. runc's cgroup freezer thaws and fails with "unable to freeze" when
// a task of the container does not reach the frozen state in its own short
// wait, which a broker busy with a burst can cause (moby/moby#48205,
// docker/compose#11991): nothing was paused, and a new try a moment later
// is the documented way on. Any other error is returned at once.
const (
	freezeAttempts = 5
	freezeRetry    = 100 * time.Millisecond
)

// pauseRetrying pauses container id, trying again (at most freezeAttempts
// times, freezeRetry apart) while the runtime says it was unable to freeze.
func pauseRetrying(ctx context.Context, cli *client.Client, id string, log *slog.Logger) error {
	for attempt := 1; ; attempt++ {
		err := cli.ContainerPause(ctx, id)
		if err == nil || attempt == freezeAttempts || !strings.Contains(err.Error(), "unable to freeze") {
			if err != nil && attempt > 1 {
				return fmt.Errorf("%w (after %d tries)", err, attempt)
			}
			return err
		}
		log.Info("the runtime could not freeze the container; trying again", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (then %w)", err, ctx.Err())
		case <-time.After(freezeRetry):
		}
	}
}

// Unpause thaws a paused broker.
func (c *Container) Unpause(ctx context.Context, target scenario.Target) error {
	if err := single(target); err != nil {
		return err
	}
	if err := c.cli.ContainerUnpause(ctx, c.ID); err != nil {
		return fmt.Errorf("unpause container %q: %w", c.Name, err)
	}
	c.undone(func(r *Restore) { r.Unpause = false })
	return nil
}

// Disconnect removes the broker from every Docker network it is on: Docker
// drops its port mapping, so every client link fails at once (EOF/reset)
// while the node keeps running. Reconnect puts it back.
func (c *Container) Disconnect(ctx context.Context, target scenario.Target) error {
	if err := single(target); err != nil {
		return err
	}
	info, err := c.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("inspect container %q: %w", c.Name, err)
	}
	c.networks, c.aliases = c.networks[:0], map[string][]string{}
	if info.NetworkSettings != nil {
		for name, ep := range info.NetworkSettings.Networks {
			c.networks = append(c.networks, name)
			if ep != nil {
				c.aliases[name] = ep.Aliases
			}
		}
	}
	slices.Sort(c.networks)
	if len(c.networks) == 0 {
		return fmt.Errorf("container %q is on no network to disconnect", c.Name)
	}
	if err := c.alter("disconnected from its networks and reconnected", func(r *Restore) { r.Reconnect = slices.Clone(c.networks) }); err != nil {
		return err
	}
	for _, n := range c.networks {
		if err := c.cli.NetworkDisconnect(ctx, n, c.ID, true); err != nil {
			return fmt.Errorf("disconnect container %q from network %q: %w", c.Name, n, err)
		}
	}
	return nil
}

// Reconnect reattaches the broker to the networks Disconnect removed it
// from, with the aliases it had there (the default bridge network has
// none), and re-reads its published port (an ephemeral one changes).
func (c *Container) Reconnect(ctx context.Context, target scenario.Target) error {
	if err := single(target); err != nil {
		return err
	}
	info, err := c.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("inspect container %q: %w", c.Name, err)
	}
	for _, n := range c.networks {
		if info.NetworkSettings != nil && info.NetworkSettings.Networks[n] != nil {
			continue // still attached (a disconnect that failed part-way)
		}
		if err := c.cli.NetworkConnect(ctx, n, c.ID, &network.EndpointSettings{Aliases: c.aliases[n]}); err != nil {
			return fmt.Errorf("reconnect container %q to network %q: %w", c.Name, n, err)
		}
	}
	c.undone(func(r *Restore) { r.Reconnect = nil })
	return c.rereadPort(ctx)
}

// rereadPort reads the published AMQP port again.
func (c *Container) rereadPort(ctx context.Context) error {
	info, err := c.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("inspect container %q: %w", c.Name, err)
	}
	return c.readPort(info)
}

// Start starts the container again once it has exited (a kill's signal may
// take a moment to end the node). For an attached container it re-reads the
// published port, which changes on every start with an ephemeral binding;
// a container rmqtorture created has its port fixed at creation.
func (c *Container) Start(ctx context.Context, target scenario.Target) error {
	if err := single(target); err != nil {
		return err
	}
	if err := c.waitStopped(ctx); err != nil {
		return err
	}
	if err := c.cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container %q: %w", c.Name, err)
	}
	c.undone(func(r *Restore) { r.Start = false })
	if c.Owned {
		return nil // the host port was fixed at creation
	}
	info, err := c.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("inspect container %q: %w", c.Name, err)
	}
	return c.readPort(info)
}

// WaitReady polls (every 100 ms) until an AMQP connection with login succeeds
// or timeout passes. A TCP connect alone proves nothing: Docker's userland
// proxy accepts on the published port before RabbitMQ listens. Each failed
// login is followed by a look at the container: one that has exited, is
// dead or was removed will never log in, so the wait fails at once with its
// exit code and last log lines rather than after the timeout.
func (c *Container) WaitReady(ctx context.Context, target scenario.Target, timeout time.Duration) error {
	if err := single(target); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var last error
	for {
		conn, err := amqp.DialConfig(c.URL(), amqp.Config{Dial: amqp.DefaultDial(2 * time.Second), Properties: amqp.Table{"connection_name": "rmqtorture-readiness"}})
		if err == nil {
			_ = conn.CloseDeadline(time.Now().Add(2 * time.Second))
			return nil
		}
		last = err
		if err := c.cannotBecomeReady(ctx, time.Since(start)); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return fmt.Errorf("broker %q did not accept an AMQP login on %s within %s (last error: %v); its last log lines: %s", c.Name, c.Addr(), timeout, last, c.logTail(lctx, 8, " | "))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cannotBecomeReady returns an error when the container has exited, is
// dead or is gone (Docker's states: created, running, paused, restarting,
// removing, exited, dead), naming its exit code and last log lines; waited
// is how long the readiness wait had run. An inspect that fails otherwise
// says nothing about the broker: the wait goes on.
func (c *Container) cannotBecomeReady(ctx context.Context, waited time.Duration) error {
	info, err := c.cli.ContainerInspect(ctx, c.ID)
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	switch {
	case client.IsErrNotFound(err):
		return fmt.Errorf("broker container %q was removed after %.1f s of waiting for an AMQP login", c.Name, waited.Seconds())
	case err != nil || info.State == nil:
		return nil
	}
	st := info.State
	verb, ok := map[string]string{"exited": "exited", "dead": "is dead", "removing": "is being removed"}[st.Status]
	if !ok {
		return nil
	}
	why := ""
	if st.OOMKilled {
		why = ", killed for lack of memory (OOMKilled)"
	}
	if st.Error != "" {
		why += ", " + redact.Foreign(st.Error)
	}
	// The whole log (bounded): the refusal comes first, and the crash
	// reports after it are of any length (a process's crash report with
	// its state ran past a 200-line tail).
	if refused := configRefusal(c.logTail(lctx, 0, "\n")); refused != "" {
		return fmt.Errorf("broker container %q %s (exit code %d%s) after %.1f s: RabbitMQ refused the configuration rmqtorture wrote from the scenario's broker.config: %s",
			c.Name, verb, st.ExitCode, why, waited.Seconds(), refused)
	}
	return fmt.Errorf("broker container %q %s (exit code %d%s) after %.1f s of waiting for an AMQP login: it will not accept one; its last log lines: %s",
		c.Name, verb, st.ExitCode, why, waited.Seconds(), c.logTail(lctx, 8, " | "))
}

// maxLogRead bounds what logTail reads of a container's log (bytes).
const maxLogRead = 4 << 20

// logTail returns the container's last n log lines (n 0: its whole log, at
// most maxLogRead bytes from its start) joined by sep (" | " for a
// message): the container may be removed before anyone reads `docker logs`.
func (c *Container) logTail(ctx context.Context, n int, sep string) string {
	tail := strconv.Itoa(n)
	if n <= 0 {
		tail = "all"
	}
	rc, err := c.cli.ContainerLogs(ctx, c.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail})
	if err != nil {
		return "(unavailable: " + err.Error() + ")"
	}
	defer rc.Close()
	var out bytes.Buffer
	// A log cut at maxLogRead ends inside a frame: what was read stands.
	if _, err := stdcopy.StdCopy(&out, &out, io.LimitReader(rc, maxLogRead)); err != nil && out.Len() == 0 {
		return "(unavailable: " + err.Error() + ")"
	}
	// RabbitMQ colours its console log when it believes it has a terminal;
	// the tail ends up in report.md, result.json and on stdout.
	lines := strings.Split(strings.TrimSpace(redact.Foreign(out.String())), "\n")
	return strings.Join(lines, sep)
}

// ServerVersion returns the broker's version from its server properties.
func (c *Container) ServerVersion() string {
	return amqpx.ServerVersion(c.URL())
}

// Remove force-removes the container and its anonymous volumes if this run
// created it; an attached container is left alone. Call it with a context
// that survives Ctrl-C.
func (c *Container) Remove(ctx context.Context) error {
	if !c.Owned {
		return nil
	}
	if _, err := c.guard(ctx); err != nil {
		if client.IsErrNotFound(err) {
			untrack(c.ID)
			return c.removeLazy()
		}
		return err
	}
	if err := c.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		return fmt.Errorf("remove container %q: %w", c.Name, err)
	}
	untrack(c.ID)
	c.log.Info("broker container removed", "name", c.Name)
	return c.removeLazy()
}

// removeLazy unmounts and removes the container's lazy filesystem, if it
// has one; the container is gone.
func (c *Container) removeLazy() error {
	if c.lazy == nil {
		return nil
	}
	if err := c.lazy.remove(); err != nil {
		return fmt.Errorf("container %q: %w", c.Name, err)
	}
	c.lazy = nil
	return nil
}

// Leftovers lists containers labelled as rmqtorture's (from runs that could
// not clean up, e.g. after SIGKILL of rmqtorture itself). Labelled lists
// networks and volumes too, with their owners, for cleanup's scopes.
func Leftovers(ctx context.Context, cli *client.Client) ([]container.Summary, error) {
	return cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))})
}

// RemoveLeftover force-removes one container listed by Leftovers, after
// checking its label again; one that another process is removing already
// is waited for, and one that is gone counts as removed.
func RemoveLeftover(ctx context.Context, cli *client.Client, id string) error {
	info, err := cli.ContainerInspect(ctx, id)
	if err != nil {
		return fmt.Errorf("inspect container %s: %w", id, err)
	}
	if info.Config == nil || info.Config.Labels[LabelManaged] != "true" {
		return fmt.Errorf("refusing to remove container %s: no %s label", id, LabelManaged)
	}
	// Another process may be removing the same leftover (two runs'
	// sweeps at once): its removal is waited for, a minute at most, not
	// reported as ours failing.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return removeAndWait(ctx, cli, id, info.Name)
}

// Container implements every fault port for the single broker.
var _ engine.Broker = (*Container)(nil)

// single accepts the targets a single broker container can act on (the
// broker, or all of it) and refuses the cluster kinds.
func single(t scenario.Target) error {
	if !t.Single() {
		return fmt.Errorf("target %s needs a cluster", t)
	}
	return nil
}
