package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// A cluster's Docker layout. Every node has its AMQP port published on
// the host address (127.0.0.1 unless the user names another) through one client network (rmqt-RUN-client), and its
// inter-node traffic (Erlang distribution) on one internal network per pair
// of nodes (rmqt-RUN-link-1-2, …), on which each of the two carries the
// alias rmqN. Node i runs as rabbit@rmqI (RABBITMQ_NODENAME), its own name
// pinned to 127.0.0.1 in its /etc/hosts, so the only way one node finds
// another is the pair network they share: a partition disconnects a node
// from the pair networks it cuts, and heal connects it again with its
// alias, while every client port stays where it was.
//
// Why the container's hostname is not rmqN: on a user-defined network,
// Docker 20.10 adds the container's hostname as a DNS alias on every
// network it joins (the client network included), so with hostname rmqN
// the nodes would still find each other over the client network and no
// partition would hold. The hostname is the container's name instead
// (which every network resolves anyway, and no node looks up), and the
// node name comes from RABBITMQ_NODENAME
// (https://www.rabbitmq.com/docs/configure#supported-environment-variables).
//
// Measured on a 2-core machine, RabbitMQ 4.0.5, 3 nodes (TestCluster logs
// them): formed 20-41 s after creation began, the slower when other
// containers share the cores (5 nodes: 32 s); ~100-110 MiB per idle
// node. Leader SIGKILL: its peers see the connection close, and a
// new leader is elected 0.4 s later (broker log); the killed node accepts
// a login 6-9 s after its start and is a follower ~1 s after that. Leader
// isolated by a partition: a new leader 6.6 s later (broker log); the
// isolated node keeps serving its clients (a connection opened before
// held through a 90 s partition); after heal it is a follower again
// within 1.4-6.1 s.

// rabbitHome is the rabbitmq user's HOME in the broker images, where the
// Erlang cookie lives (https://www.rabbitmq.com/docs/cli#erlang-cookie).
const rabbitHome = "/var/lib/rabbitmq"

// clusterNetTicktime is the Erlang net_ticktime (seconds) of a cluster's
// nodes unless the scenario's broker.config sets one: how long a node
// takes to declare a peer it cannot reach down (45-75 s at Erlang's
// default of 60; https://www.rabbitmq.com/docs/nettick). Measured here
// with the leader isolated from the two other nodes of 3: at 60 the
// majority elected a new leader within 8-15 s (Ra's own failure detector)
// but its nodes still read the queue through the old leader and reported
// 0 messages (passive declare) for 66 s, until the tick declared it down;
// at 15 they reported all 100 after 17 s. RabbitMQ's Jepsen suite runs
// with 15 too, for the same reason (short runs).
const clusterNetTicktime = 15

// ClusterOptions configure a new cluster.
type ClusterOptions struct {
	Image string
	RunID string
	// Nodes is how many nodes (at least 2).
	Nodes int
	// Keep labels every container and network as kept (--keep).
	Keep bool
	// Config (rabbitmq.conf keys) and AdvancedConfig (rabbit application
	// keys) are written into every node before its first start, with the
	// cluster's own keys (cluster_formation.*) over the scenario's, and
	// net_ticktime = 15 unless Config sets it (clusterNetTicktime).
	Config         map[string]string
	AdvancedConfig map[string]int
	// Address is the engine host's IP to publish ports on and dial ("":
	// DefaultAddress); see CreateOptions.Address.
	Address string
	// HostPorts are the ports to publish each node's AMQP on
	// (index 0: node 1); 0, or a missing entry, picks a free one. Fixed at
	// creation, so a node keeps its port across restarts.
	HostPorts []int
	// LazyFS puts each node's data directory on a lazy filesystem of its
	// own (CreateOptions.LazyFS).
	LazyFS bool
	// Streams enables the stream plugin on every node and publishes each
	// node's stream port, advertised as its own (enableStreams).
	Streams bool
}

// Cluster is a cluster of RabbitMQ nodes, each a *Container, numbered
// 1..Size() (node 2 is rabbit@rmq2). One rmqtorture created (CreateCluster)
// is removed by Remove, networks included; one the user named
// (AttachCluster) never is, and cannot be partitioned (its links are not
// rmqtorture's to cut).
type Cluster struct {
	cli   *client.Client
	log   *slog.Logger
	Image string
	runID string
	owned bool
	// streams: created with Streams, so the queue under test is a stream
	// and Members reads stream_status.
	streams bool
	nodes   []*Container // index i: node i+1
	// erlang are the nodes' Erlang node names (rabbit@rmq2), index i:
	// node i+1.
	erlang []string
	// clientNet carries the published ports; links are the pair networks.
	// Both empty on an attached cluster.
	clientNet string
	links     map[link]string

	mu     sync.Mutex
	state  []nodeState // index i: node i+1
	cut    []link      // the links the current partition cut
	sides  string      // and how its sides read
	side   []int       // the nodes the partition's target named (first to restart, see rejoin)
	netIDs []string    // networks created, for Remove
}

// nodeState is what this run's faults have done to a node, for choosing
// the node to ask (an up one that sees most others) and for what a
// network reconciliation wants.
type nodeState struct {
	down, paused, disconnected bool
}

// The Cluster implements every fault port and the Cluster port.
var (
	_ engine.Broker  = (*Cluster)(nil)
	_ engine.Cluster = (*Cluster)(nil)
)

// self is the target handed to a node's own *Container methods.
var self = scenario.BrokerTarget()

// erlangNode is the Erlang node name of cluster node i.
func erlangNode(i int) string { return "rabbit@" + scenario.NodeName(i) }

// CreateCluster creates opts.Nodes labelled broker containers (rmqt-RUN-1
// …, node names rabbit@rmq1 …), their client network and one internal
// network per pair of nodes (all labelled like the containers, so cleanup
// lists and removes them), writes the same fresh Erlang cookie (0400,
// owned by the user who owns /var/lib/rabbitmq) and the classic_config
// peer discovery (https://www.rabbitmq.com/docs/cluster-formation) into
// each, and starts them all. Call WaitFormed next. On an error the
// returned cluster (when not nil) holds what was created: Remove it.
func CreateCluster(ctx context.Context, cli *client.Client, log *slog.Logger, opts ClusterOptions) (*Cluster, error) {
	if opts.Nodes < 2 {
		return nil, fmt.Errorf("a cluster needs at least 2 nodes, not %d", opts.Nodes)
	}
	if err := imagePresent(ctx, cli, opts.Image); err != nil {
		return nil, err
	}
	c := &Cluster{cli: cli, log: log, Image: opts.Image, runID: opts.RunID, owned: true, streams: opts.Streams,
		state: make([]nodeState, opts.Nodes), links: map[link]string{}}
	for i := 1; i <= opts.Nodes; i++ {
		c.erlang = append(c.erlang, erlangNode(i))
	}
	prefix := "rmqt-" + opts.RunID
	var err error
	if c.clientNet, err = c.createNetwork(ctx, prefix+"-client", false, opts.Keep); err != nil {
		return c, err
	}
	for _, l := range allLinks(opts.Nodes) {
		if c.links[l], err = c.createNetwork(ctx, fmt.Sprintf("%s-link-%d-%d", prefix, l.A, l.B), true, opts.Keep); err != nil {
			return c, err
		}
	}
	cookie := rand.Text() // 26 base32 characters, 130 bits
	conf := maps.Clone(opts.Config)
	if conf == nil {
		conf = map[string]string{}
	}
	if _, set := conf["net_ticktime"]; !set {
		conf["net_ticktime"] = strconv.Itoa(clusterNetTicktime)
	}
	conf["cluster_formation.peer_discovery_backend"] = "classic_config"
	for i := 1; i <= opts.Nodes; i++ {
		conf["cluster_formation.classic_config.nodes."+strconv.Itoa(i)] = erlangNode(i)
	}
	for i := 1; i <= opts.Nodes; i++ {
		port := 0
		if i <= len(opts.HostPorts) {
			port = opts.HostPorts[i-1]
		}
		n, err := c.createNode(ctx, opts, i, port)
		if n != nil {
			c.nodes = append(c.nodes, n)
		}
		if err != nil {
			return c, err
		}
		if err := n.writeConfig(ctx, conf, opts.AdvancedConfig); err != nil {
			return c, err
		}
		if err := n.writeCookie(ctx, cookie); err != nil {
			return c, err
		}
		if err := c.sync(ctx, i); err != nil {
			return c, err
		}
	}
	err = c.each(c.all(), func(i int, n *Container) error {
		if err := cli.ContainerStart(ctx, n.ID, container.StartOptions{}); err != nil {
			return fmt.Errorf("start broker container %q: %w", n.Name, err)
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	log.Info("cluster started", "name", c.Name(), "image", opts.Image, "amqp", c.Addrs())
	return c, nil
}

// createNetwork creates one labelled bridge network (internal: no route
// out, and no published port) and tracks it for RemoveCreated.
func (c *Cluster) createNetwork(ctx context.Context, name string, internal, keep bool) (string, error) {
	resp, err := c.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Internal: internal, Labels: Labels(c.runID, keep)})
	if err != nil {
		return "", fmt.Errorf("create network %q: %w (each cluster takes one network per pair of nodes and one for clients from Docker's address pools)", name, err)
	}
	c.mu.Lock()
	c.netIDs = append(c.netIDs, resp.ID)
	c.mu.Unlock()
	if !keep {
		trackNet(c.cli, resp.ID, name)
	}
	return name, nil
}

// streamNodeSysctls bound a TCP connect from a node of a stream cluster
// to about 7 s (two SYN retries, not Linux's six: about 127 s). A stream
// replica hands the writer's node every address its hostname has (osiris
// osiris_replica.erl: inet:getaddrs), one per network the container is on,
// in an order that changes across restarts, and the writer's side
// connects to each in turn with no timeout of its own
// (osiris_replica_reader.erl). An address on a pair network the writer's
// node is not on answers nothing, so the stream committed nothing for two
// minutes (measured on RabbitMQ 4.0.5, before any fault and after a power
// cut); with the bound it moves on to the next address in seconds.
var streamNodeSysctls = map[string]string{"net.ipv4.tcp_syn_retries": "2"}

// createNode creates node i's container (not started) on the client
// network, its AMQP port published on opts.Address:port (0: a free port).
func (c *Cluster) createNode(ctx context.Context, opts ClusterOptions, i, port int) (*Container, error) {
	if port == 0 {
		p, err := freePort(opts.Address)
		if err != nil {
			return nil, err
		}
		port = p
	}
	name := fmt.Sprintf("rmqt-%s-%d", opts.RunID, i)
	cfg := &container.Config{
		Image:        opts.Image,
		Hostname:     name,
		Env:          []string{"RABBITMQ_NODENAME=" + erlangNode(i)},
		ExposedPorts: nat.PortSet{amqpPort: {}}, // without it PortBindings is silently ignored on API 1.41
		Labels:       Labels(opts.RunID, opts.Keep),
	}
	host := &container.HostConfig{
		PortBindings: nat.PortMap{amqpPort: {{HostIP: hostIP(opts.Address), HostPort: strconv.Itoa(port)}}},
		// The node reaches itself (rabbitmqctl in the container) on
		// loopback, whatever networks it is on.
		ExtraHosts: []string{scenario.NodeName(i) + ":127.0.0.1"},
	}
	sport, err := enableStreams(opts.Streams, opts.Address, cfg, host)
	if err != nil {
		return nil, err
	}
	if opts.Streams {
		host.Sysctls = streamNodeSysctls
	}
	nets := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{c.clientNet: {}}}
	lazy, err := mountLazy(ctx, c.cli, opts.LazyFS, opts.Keep, opts.Image, opts.RunID, name, host)
	if err != nil {
		return nil, err
	}
	created, err := c.cli.ContainerCreate(ctx, cfg, host, nets, nil, name)
	if err != nil {
		_ = lazy.remove()
		return nil, fmt.Errorf("create broker container %q from %q: %w", name, opts.Image, err)
	}
	n := &Container{cli: c.cli, log: c.log, address: opts.Address, ID: created.ID, Name: name, Image: opts.Image, Owned: true, runID: opts.RunID, lazy: lazy}
	if !opts.Keep {
		track(n)
	}
	n.hostPort.Store(int64(port))
	n.streamHostPort.Store(int64(sport))
	if _, err := n.guard(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// writeCookie writes the cluster's Erlang cookie into the created, not yet
// started container as HOME/.erlang.cookie, mode 0400, owned by whoever
// owns HOME (the rabbitmq user): a cookie readable by others, or owned by
// another user, stops the node at boot (BROKER-FACTS.md).
func (c *Container) writeCookie(ctx context.Context, cookie string) error {
	uid, gid, err := c.ownerOf(ctx, rabbitHome)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: ".erlang.cookie", Mode: 0o400, Uid: uid, Gid: gid, Size: int64(len(cookie)), ModTime: time.Now(), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write([]byte(cookie)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := c.cli.CopyToContainer(ctx, c.ID, rabbitHome, &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("write the Erlang cookie into container %q: %w", c.Name, err)
	}
	return nil
}

// ownerOf reads the owner of path in the container (created or running)
// from the header of the archive the engine returns.
func (c *Container) ownerOf(ctx context.Context, path string) (uid, gid int, err error) {
	rc, _, err := c.cli.CopyFromContainer(ctx, c.ID, path)
	if err != nil {
		return 0, 0, fmt.Errorf("read the owner of %s in container %q: %w", path, c.Name, err)
	}
	defer rc.Close()
	hdr, err := tar.NewReader(rc).Next()
	if err != nil {
		return 0, 0, fmt.Errorf("read the owner of %s in container %q: %w", path, c.Name, err)
	}
	return hdr.Uid, hdr.Gid, nil
}

// AttachCluster uses running containers the user named as the cluster's
// nodes, node i being names[i-1]. rmqtorture kills, stops, pauses and
// disconnects them when a scenario says so (the user asked for that by
// naming them), recording how to undo each change as Attach does, but
// never removes them. Each node's Erlang name is its RABBITMQ_NODENAME, or
// rabbit@ and its short hostname (what rabbitmq-server picks). Its links
// are not rmqtorture's: Partition refuses. Call WaitFormed next: it checks
// that the nodes form one cluster.
func AttachCluster(ctx context.Context, cli *client.Client, log *slog.Logger, names []string, address string) (*Cluster, error) {
	if len(names) < 2 {
		return nil, fmt.Errorf("a cluster needs at least 2 containers, %d named", len(names))
	}
	c := &Cluster{cli: cli, log: log, state: make([]nodeState, len(names))}
	for _, name := range names {
		n, err := Attach(ctx, cli, log, name, address)
		if err != nil {
			return nil, err
		}
		info, err := cli.ContainerInspect(ctx, n.ID)
		if err != nil {
			return nil, fmt.Errorf("inspect container %q: %w", name, err)
		}
		c.nodes = append(c.nodes, n)
		c.erlang = append(c.erlang, nodeNameOf(info))
	}
	c.Image = c.nodes[0].Image
	return c, nil
}

// nodeNameOf is the Erlang node name rabbitmq-server picks in a container:
// RABBITMQ_NODENAME when set, else rabbit@ and the short hostname.
func nodeNameOf(info container.InspectResponse) string {
	host := ""
	if info.Config != nil {
		for _, e := range info.Config.Env {
			if v, ok := strings.CutPrefix(e, "RABBITMQ_NODENAME="); ok && v != "" {
				if !strings.Contains(v, "@") {
					v += "@" + strings.Split(info.Config.Hostname, ".")[0]
				}
				return v
			}
		}
		host = strings.Split(info.Config.Hostname, ".")[0]
	}
	return "rabbit@" + host
}

// Size is the number of nodes.
func (c *Cluster) Size() int { return len(c.nodes) }

// Nodes are the nodes' containers, index i: node i+1.
func (c *Cluster) Nodes() []*Container { return slices.Clone(c.nodes) }

// Node is node i's container (1-based), nil when there is none.
func (c *Cluster) Node(i int) *Container {
	if i < 1 || i > len(c.nodes) {
		return nil
	}
	return c.nodes[i-1]
}

// Name names the cluster: "rmqt-RUN (3 nodes)", or the containers the user
// named ("a, b, c (3 nodes)").
func (c *Cluster) Name() string {
	if c.owned {
		return fmt.Sprintf("rmqt-%s (%d nodes)", c.runID, len(c.nodes))
	}
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.Name
	}
	return fmt.Sprintf("%s (%d nodes)", strings.Join(names, ", "), len(c.nodes))
}

// Owned reports whether this run created the cluster (Remove removes it).
func (c *Cluster) Owned() bool { return c.owned }

// Addr is node i's AMQP address (1-based), on the cluster's host address; ""
// when there is no node i.
func (c *Cluster) Addr(i int) string {
	if n := c.Node(i); n != nil {
		return n.Addr()
	}
	return ""
}

// Addrs lists the nodes' AMQP addresses (no credentials), for logs.
func (c *Cluster) Addrs() string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return strings.Join(out, ", ")
}

// URLs are the nodes' AMQP URLs in node order (index 0: node 1), with
// guest's credentials: print them through redact.URL.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.URL()
	}
	return out
}

// URL is node 1's AMQP URL (credentials included: print redact.URL(URL())).
func (c *Cluster) URL() string { return c.nodes[0].URL() }

// ServerVersion is the broker's product and version as the first node
// that accepts a login reports them ("" when none does).
func (c *Cluster) ServerVersion() string {
	for _, n := range c.nodes {
		if v := n.ServerVersion(); v != "" {
			return v
		}
	}
	return ""
}

// clusterStatus is what `rabbitmqctl cluster_status --formatter json`
// says of the members (RabbitMQ 3.8 and later).
type clusterStatus struct {
	RunningNodes []string `json:"running_nodes"`
	DiskNodes    []string `json:"disk_nodes"`
	// Partitions maps a node to the nodes it saw partitioned from it
	// (https://www.rabbitmq.com/docs/partitions#detecting); empty when
	// the cluster is whole.
	Partitions map[string][]string `json:"partitions"`
}

// WaitFormed polls (about every second) `rabbitmqctl cluster_status
// --formatter json` through the first node that answers until its
// running_nodes names every node, or timeout passes; a node that reports a
// partition ends the wait at once with an *engine.PartitionError. A node whose
// container has exited fails the wait at once; at the timeout the error
// names the nodes that never joined, with each one's last log lines.
// Measured on 3 nodes here: formed 18-37 s after start.
func (c *Cluster) WaitFormed(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var running []string
	var last error
	for {
		for _, n := range c.nodes {
			xctx, xcancel := context.WithTimeout(ctx, 20*time.Second)
			out, err := n.Exec(xctx, "rabbitmqctl", "-q", "cluster_status", "--formatter", "json")
			xcancel()
			var st clusterStatus
			if err == nil {
				err = json.Unmarshal([]byte(out), &st)
			}
			if err != nil {
				last = err
				continue
			}
			if len(st.Partitions) > 0 {
				// Every node may take logins and still the cluster is
				// split; waiting does not mend it (engine.PartitionError).
				return &engine.PartitionError{Seen: st.Partitions}
			}
			if len(st.RunningNodes) >= len(running) {
				running = st.RunningNodes
			}
			if missing := c.missing(st.RunningNodes); len(missing) == 0 {
				c.log.Info("cluster formed", "name", c.Name(), "nodes", len(c.nodes), "took", time.Since(start).Round(100*time.Millisecond))
				return nil
			}
			break
		}
		for _, n := range c.nodes {
			if err := n.cannotBecomeReady(ctx, time.Since(start)); err != nil {
				return fmt.Errorf("cluster %s did not form: %w", c.Name(), err)
			}
		}
		select {
		case <-ctx.Done():
			return c.notFormed(timeout, running, last)
		case <-time.After(time.Second):
		}
	}
}

// missing lists the node numbers whose Erlang names running lacks.
func (c *Cluster) missing(running []string) []int {
	var out []int
	for i, name := range c.erlang {
		if !slices.Contains(running, name) {
			out = append(out, i+1)
		}
	}
	return out
}

// notFormed is WaitFormed's error at the timeout: which nodes never
// joined (all of them when no node answered), each with its log tail.
func (c *Cluster) notFormed(timeout time.Duration, running []string, last error) error {
	lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s did not form within %s: ", c.Name(), timeout)
	missing := c.missing(running)
	if len(running) == 0 {
		fmt.Fprintf(&b, "no node answered rabbitmqctl cluster_status (last error: %v)", last)
	} else {
		names := make([]string, len(missing))
		for k, i := range missing {
			names[k] = c.erlang[i-1]
		}
		fmt.Fprintf(&b, "%s never joined (running: %s)", strings.Join(names, ", "), strings.Join(running, ", "))
	}
	for _, i := range missing {
		fmt.Fprintf(&b, "; %s's last log lines: %s", c.nodes[i-1].Name, c.nodes[i-1].logTail(lctx, 8, " | "))
	}
	return errors.New(b.String())
}

// Remove removes the containers (in parallel), then the networks, of a
// cluster this run created; an attached cluster is left alone. Call it
// with a context that survives Ctrl-C.
func (c *Cluster) Remove(ctx context.Context) error {
	if !c.owned {
		return nil
	}
	err := c.each(c.all(), func(i int, n *Container) error { return n.Remove(ctx) })
	c.mu.Lock()
	ids := slices.Clone(c.netIDs)
	c.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := c.removeNetwork(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	if err == nil && len(errs) == 0 {
		c.log.Info("cluster removed", "name", c.Name())
	}
	return errors.Join(append([]error{err}, errs...)...)
}

// removeNetwork removes one of the cluster's networks after checking it
// carries this run's label; one already gone counts as removed.
func (c *Cluster) removeNetwork(ctx context.Context, id string) error {
	info, err := c.cli.NetworkInspect(ctx, id, network.InspectOptions{})
	if client.IsErrNotFound(err) {
		untrackNet(id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect network %s: %w", id, err)
	}
	if info.Labels[LabelManaged] != "true" || info.Labels[LabelRun] != c.runID {
		return fmt.Errorf("refusing to remove network %q: it does not carry this run's %s label", info.Name, LabelRun)
	}
	if err := c.cli.NetworkRemove(ctx, id); err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("remove network %q: %w", info.Name, err)
	}
	untrackNet(id)
	return nil
}

// all lists every node number.
func (c *Cluster) all() []int {
	out := make([]int, len(c.nodes))
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// each runs f on the given nodes in parallel and joins their errors:
// a fault on a majority lands on all of it at once.
func (c *Cluster) each(nodes []int, f func(i int, n *Container) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for k, i := range nodes {
		wg.Go(func() { errs[k] = f(i, c.nodes[i-1]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// nodeIndex is the node number of an Erlang node name, 0 when it is none
// of the cluster's.
func (c *Cluster) nodeIndex(erlangName string) int {
	return slices.Index(c.erlang, erlangName) + 1
}

// ScanLog scans every node's log since since (see Container.ScanLog) and
// merges the findings by signature, in the scanner's order: counts and
// messages summed over the nodes, the first line of the lowest-numbered
// node that has one, prefixed with its name ("rmq2: …").
func (c *Cluster) ScanLog(ctx context.Context, since time.Time) ([]scenario.BrokerLogFinding, error) {
	var out []scenario.BrokerLogFinding
	var errs []error
	for i, n := range c.nodes {
		found, err := n.ScanLog(ctx, since)
		if err != nil {
			errs = append(errs, err)
		}
		out = mergeFindings(out, found, scenario.NodeName(i+1))
	}
	return out, errors.Join(errs...)
}

// mergeFindings adds node's findings to into (see Cluster.ScanLog).
func mergeFindings(into, found []scenario.BrokerLogFinding, node string) []scenario.BrokerLogFinding {
	for _, f := range found {
		k := slices.IndexFunc(into, func(g scenario.BrokerLogFinding) bool { return g.Signature == f.Signature })
		if k >= 0 {
			into[k].Count += f.Count
			into[k].Messages += f.Messages
			continue
		}
		f.FirstLine = node + ": " + f.FirstLine
		into = append(into, f)
	}
	rank := func(sig string) int {
		return slices.IndexFunc(logSignatures, func(s logSignature) bool { return s.name == sig })
	}
	slices.SortStableFunc(into, func(a, b scenario.BrokerLogFinding) int { return rank(a.Signature) - rank(b.Signature) })
	return into
}

// statusTimeout bounds one node's `rabbitmqctl cluster_status`: about 1 s
// on a whole cluster, 7 s and more on a partitioned one (measured on
// RabbitMQ 4.0.5, 3 nodes).
const statusTimeout = 30 * time.Second

// statuses asks every node's `rabbitmqctl cluster_status` once, all at
// once (each within statusTimeout of ctx): each node's status, in node
// order (nil when it did not answer), and its error.
func (c *Cluster) statuses(ctx context.Context) ([]*clusterStatus, []error) {
	sts, errs := make([]*clusterStatus, len(c.nodes)), make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			xctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			out, err := n.Exec(xctx, "rabbitmqctl", "-q", "cluster_status", "--formatter", "json")
			var st clusterStatus
			if err == nil {
				err = json.Unmarshal([]byte(out), &st)
			}
			if err != nil {
				errs[i] = err
				return
			}
			sts[i] = &st
		}()
	}
	wg.Wait()
	return sts, errs
}

// mergePartitions merges what the nodes that answered report as
// partitioned: a node's Erlang name → the nodes it saw partitioned from
// it, sorted, each once.
func mergePartitions(sts []*clusterStatus) map[string][]string {
	seen := map[string][]string{}
	for _, st := range sts {
		if st == nil {
			continue
		}
		for node, others := range st.Partitions {
			seen[node] = append(seen[node], others...)
		}
	}
	for node := range seen {
		slices.Sort(seen[node])
		seen[node] = slices.Compact(seen[node])
	}
	return seen
}

// Partitions asks every node's `rabbitmqctl cluster_status` (within ctx)
// and merges what they report as partitioned: a node's Erlang name → the
// nodes it saw partitioned from it. A node that does not answer is
// skipped; the error comes only when none answered.
func (c *Cluster) Partitions(ctx context.Context) (map[string][]string, error) {
	sts, errs := c.statuses(ctx)
	if !slices.ContainsFunc(sts, func(st *clusterStatus) bool { return st != nil }) {
		return nil, fmt.Errorf("no node of %s answered rabbitmqctl cluster_status: %w", c.Name(), errors.Join(errs...))
	}
	return mergePartitions(sts), nil
}

// WaitWhole polls every node's `rabbitmqctl cluster_status` (about every
// second) until every node answers, lists every node as running and
// reports no partition, or timeout has passed: then its error says what
// the last poll saw (an *engine.PartitionError when a node reported a
// partition, else the nodes that did not answer or were not running).
// A poll under way when timeout passes is finished (each call within
// statusTimeout), so a partitioned cluster, slow to answer, is seen as
// partitioned rather than silent.
func (c *Cluster) WaitWhole(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		last := c.wholeNow(ctx)
		if last == nil || !time.Now().Before(deadline) || ctx.Err() != nil {
			return last
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(min(time.Second, time.Until(deadline))):
		}
	}
}

// wholeNow asks every node once: nil when the cluster is whole, else what
// is wrong (a partition first: it is the finding).
func (c *Cluster) wholeNow(ctx context.Context) error {
	sts, errs := c.statuses(ctx)
	if seen := mergePartitions(sts); len(seen) > 0 {
		return &engine.PartitionError{Seen: seen}
	}
	var problems []string
	for i, st := range sts {
		switch {
		case st == nil:
			problems = append(problems, fmt.Sprintf("%s did not answer (%v)", c.erlang[i], errs[i]))
		case len(c.missing(st.RunningNodes)) > 0:
			problems = append(problems, fmt.Sprintf("%s lists %s as not running", c.erlang[i], scenario.NodeNames(c.missing(st.RunningNodes))))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
