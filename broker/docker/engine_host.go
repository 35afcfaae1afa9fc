package docker

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/cli/cli/context/docker"
	"github.com/docker/cli/cli/context/store"
	"github.com/docker/docker/client"

	"github.com/rmqtorture/rmqtorture/redact"
)

// DefaultAddress is the host address a broker's ports are published on,
// and the one clients dial, unless the user names another
// (CreateOptions.Address, --broker-address).
const DefaultAddress = "127.0.0.1"

// envDockerContext names the Docker CLI context to use, as the CLI reads
// it (cli/command/cli.go, EnvOverrideContext).
const envDockerContext = "DOCKER_CONTEXT"

// dockerEngine is the Docker Engine endpoint rmqtorture talks to, chosen as the
// Docker CLI chooses it (cli/command/cli.go, resolveContextName): DOCKER_HOST
// when set; else the context DOCKER_CONTEXT names; else the config file's
// currentContext (what `docker context use NAME` writes); else the local
// socket. context is "" for DOCKER_HOST and the CLI's "default" context.
type dockerEngine struct {
	context string          // the Docker CLI context, "" when none
	host    string          // DOCKER_HOST or the context's docker endpoint
	ep      docker.Endpoint // the context's endpoint, with its TLS data
	err     error           // the context could not be read
}

// dockerConfigDir is the Docker CLI's configuration folder: DOCKER_CONFIG,
// else ~/.docker. Looked up on every call, not through the CLI's
// config.Dir, which keeps the first answer for the life of the process.
func dockerConfigDir() string {
	if dir := os.Getenv(config.EnvOverrideConfigDir); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".docker")
}

// resolveEngine finds the engine as the Docker CLI would. A context that
// does not exist or cannot be read is kept in err, for clientOpts to
// return: the CLI refuses it too, rather than fall back to another engine.
func resolveEngine() dockerEngine {
	if host := os.Getenv(client.EnvOverrideHost); host != "" {
		return dockerEngine{host: host}
	}
	name := os.Getenv(envDockerContext)
	dir := dockerConfigDir()
	if name == "" {
		cfg, err := config.Load(dir)
		if err != nil { // the error names the file
			return dockerEngine{err: err}
		}
		name = cfg.CurrentContext
	}
	if name == "" || name == "default" {
		return dockerEngine{host: client.DefaultDockerHost}
	}
	e := dockerEngine{context: name}
	st := store.New(filepath.Join(dir, "contexts"), store.NewConfig(func() any { return &map[string]any{} },
		store.EndpointTypeGetter(docker.DockerEndpoint, func() any { return &docker.EndpointMeta{} })))
	meta, err := st.GetMetadata(name)
	if err != nil {
		e.err = err
		return e
	}
	epMeta, err := docker.EndpointFromContext(meta)
	if err == nil {
		e.ep, err = docker.WithTLSData(st, name, epMeta)
	}
	e.host, e.err = e.ep.Host, err
	return e
}

// String is the engine for logs and errors, any password masked:
// "ssh://deploy@build-1", or with a context "ssh://deploy@build-1 (Docker
// context build)".
func (e dockerEngine) String() string {
	switch {
	case e.host == "" && e.context == "":
		return "the Docker CLI's configuration"
	case e.context == "":
		return redact.URL(e.host)
	case e.host == "":
		return "Docker context " + e.context
	}
	return redact.URL(e.host) + " (Docker context " + e.context + ")"
}

// EngineDescription is EngineHost with the product and version the engine
// reports (GET /version: Platform.Name, else its first component's name,
// and Version): "unix:///var/run/docker.sock (Docker Engine - Community
// 28.5.2)", "tcp://127.0.0.1:2375 (Podman Engine 5.4.2)"; EngineHost alone
// when the engine does not answer.
func EngineDescription(ctx context.Context, cli *client.Client) string {
	host := EngineHost()
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		return host
	}
	// Docker names its engine component "Engine" and its platform
	// "Docker Engine - Community" (Debian's docker.io: no platform);
	// Podman names its component "Podman Engine" and its platform by
	// OS ("linux/amd64/debian-12").
	product := "Docker Engine"
	switch {
	case len(v.Components) > 0 && v.Components[0].Name != "Engine" && strings.HasSuffix(v.Components[0].Name, "Engine"):
		product = v.Components[0].Name
	case strings.HasPrefix(v.Platform.Name, "Docker"):
		product = v.Platform.Name
	}
	return fmt.Sprintf("%s (%s %s)", host, product, v.Version)
}

// EngineHost is the Docker Engine rmqtorture talks to, as the Docker CLI
// finds it (DOCKER_HOST, else DOCKER_CONTEXT, else the context `docker
// context use` chose, else the local socket unix:///var/run/docker.sock),
// with any password masked: for logs and error messages.
func EngineHost() string { return resolveEngine().String() }

// clientOpts are the Docker client's options for engine e (resolveEngine),
// as the Docker CLI builds them (cli/context/docker/load.go,
// ClientOpts): unix:// and tcp:// from DOCKER_HOST through client.FromEnv,
// which also reads DOCKER_TLS_VERIFY and DOCKER_CERT_PATH for TLS and
// DOCKER_API_VERSION; a context's endpoint with the TLS material the
// context store holds for it; ssh://[user@]host[:port][/socket], from
// either, through the CLI's connection helper, which runs `ssh … docker
// system dial-stdio` on the remote host (the moby client cannot dial
// ssh:// itself). ssh reads its own configuration (~/.ssh/config: keys,
// known hosts, ports), as `docker -H ssh://…` does.
func (e dockerEngine) clientOpts() ([]client.Opt, error) {
	switch {
	case e.err != nil:
		return nil, fmt.Errorf("%s: %w", e, masked{e.err})
	case strings.HasPrefix(e.host, "ssh://"):
		return sshOpts(e)
	case e.context != "":
		opts, err := e.ep.ClientOpts()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e, masked{err})
		}
		return opts, nil
	}
	return []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}, nil
}

// sshOpts are the client's options for an ssh:// engine.
func sshOpts(e dockerEngine) ([]client.Opt, error) {
	helper, err := connhelper.GetConnectionHelper(e.host)
	if err != nil {
		if e.context == "" {
			return nil, fmt.Errorf("DOCKER_HOST=%s: %w", e, masked{err})
		}
		return nil, fmt.Errorf("%s: %w", e, masked{err})
	}
	// No TLS and no proxy: ssh carries the connection. Every new
	// connection is a new ssh process (100-300 ms), so more idle ones are
	// kept than net/http's 2: a kill waits for no ssh handshake while the
	// log follower and inspect polls hold theirs.
	tr := &http.Transport{DialContext: helper.Dialer, MaxIdleConnsPerHost: 8}
	return []client.Opt{
		client.WithHTTPClient(&http.Client{Transport: tr}),
		client.WithHost(helper.Host),
		client.WithDialContext(helper.Dialer),
		client.WithVersionFromEnv(),
		client.WithAPIVersionNegotiation(),
	}, nil
}

// CheckAddress checks a host address for CreateOptions.Address: an IPv4 or
// IPv6 literal that a client can dial (not 0.0.0.0, ::, or multicast),
// since Docker publishes a port on an IP, not a name. It returns the
// canonical spelling.
func CheckAddress(s string) (string, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return "", fmt.Errorf("%q is not an IP address (Docker publishes ports on an IP address of the engine's host, e.g. 127.0.0.1 or 192.0.2.10)", s)
	}
	if ip.IsUnspecified() || ip.IsMulticast() {
		return "", fmt.Errorf("%q cannot be dialled: name the one address of the engine's host that clients reach it on, e.g. 127.0.0.1", s)
	}
	return ip.Unmap().String(), nil
}

// hostIP is addr, or DefaultAddress when addr is empty.
func hostIP(addr string) string {
	if addr == "" {
		return DefaultAddress
	}
	return addr
}

// The host ports rmqtorture picks for the brokers it creates lie below
// Linux's default ephemeral range (32768–60999,
// /proc/sys/net/ipv4/ip_local_port_range). The Docker Engine gives a
// container that asks for any host port one from that range, and client
// sockets take their local ports there: a port picked inside it could be
// handed to another container between the pick and the start ("Bind for
// 127.0.0.1:46041 failed: port is already allocated", seen when two test
// shards started brokers at once).
const (
	pickPortLow  = 20000
	pickPortHigh = 32767
	pickTries    = 64
)

// freePort picks a port free on addr (empty: DefaultAddress) in
// [pickPortLow, pickPortHigh], at random, trying at most pickTries; when
// none is free it asks the kernel for one. An address that is not this
// machine's (a remote engine's host) cannot be asked: a port free on
// 127.0.0.1 is taken instead, and should it be in use over there, the
// engine refuses to start the container and says so.
func freePort(addr string) (int, error) {
	host := hostIP(addr)
	for range pickTries {
		port := pickPortLow + mrand.IntN(pickPortHigh-pickPortLow+1)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if errors.Is(err, syscall.EADDRNOTAVAIL) && host != DefaultAddress {
			host = DefaultAddress
			continue
		}
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return kernelPort(addr)
}

// kernelPort asks the kernel for a free port on addr (one of the ephemeral
// range), as freePort's last resort.
func kernelPort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(hostIP(addr), "0"))
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		l, err = net.Listen("tcp", net.JoinHostPort(DefaultAddress, "0"))
	}
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", hostIP(addr), err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PortFree checks that port is free on addr by listening on it for a
// moment. On an address that is not this machine's it cannot tell, and
// returns nil: the engine reports a port in use when it starts the broker.
func PortFree(addr string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(hostIP(addr), fmt.Sprint(port)))
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		return nil
	}
	if err != nil {
		return err
	}
	return l.Close()
}

// masked is an error whose text has every URL password masked (the Docker
// client quotes DOCKER_HOST whole), still unwrapping to the error itself.
type masked struct{ err error }

func (m masked) Error() string { return redact.Text(m.err.Error()) }
func (m masked) Unwrap() error { return m.err }
