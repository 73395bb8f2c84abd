package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/signd/signd/store/etcd"
)

type memberOpts struct {
	name, dir string
	client    *url.URL
	peer      *url.URL
	// advertise is the peer URL the other members dial (a delay proxy in
	// front of peer); peer when not given.
	advertise *url.URL
	cluster   string
}

var memberName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

func parseMember(args []string, errOut io.Writer) (memberOpts, error) {
	var o memberOpts
	var client, peer, advertise string
	fs := flag.NewFlagSet("signd-cluster etcd", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&o.name, "name", "", "member name (a-z, 0-9, -; at most 32)")
	fs.StringVar(&o.dir, "dir", "", "data directory of the member")
	fs.StringVar(&client, "client", "", "client URL, http://127.0.0.1:PORT")
	fs.StringVar(&peer, "peer", "", "peer URL, http://127.0.0.1:PORT")
	fs.StringVar(&advertise, "advertise-peer", "", "peer URL the other members dial, if not --peer (a signd-cluster delay in front of it)")
	fs.StringVar(&o.cluster, "cluster", "", "every member: NAME=PEER_URL,NAME=PEER_URL,... (the advertised peer URLs)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("etcd: unexpected argument %q", fs.Arg(0))
	}
	switch {
	case o.name == "" || o.dir == "" || client == "" || peer == "" || o.cluster == "":
		return o, errors.New("etcd needs --name, --dir, --client, --peer and --cluster")
	case !memberName.MatchString(o.name):
		return o, fmt.Errorf("--name %q: want a-z, 0-9 and -, at most 32", o.name)
	}
	var err error
	if o.client, err = loopbackURL("--client", client); err != nil {
		return o, err
	}
	if o.peer, err = loopbackURL("--peer", peer); err != nil {
		return o, err
	}
	advertiseFlag := "--peer"
	o.advertise = o.peer
	if advertise != "" {
		advertiseFlag = "--advertise-peer"
		if o.advertise, err = loopbackURL("--advertise-peer", advertise); err != nil {
			return o, err
		}
	}
	seen := map[string]bool{}
	for _, m := range strings.Split(o.cluster, ",") {
		name, u, ok := strings.Cut(m, "=")
		if !ok || !memberName.MatchString(name) {
			return o, fmt.Errorf("--cluster %q: want NAME=PEER_URL[,NAME=PEER_URL]", m)
		}
		if seen[name] {
			return o, fmt.Errorf("--cluster: member %q named twice", name)
		}
		seen[name] = true
		pu, err := loopbackURL("--cluster", u)
		if err != nil {
			return o, err
		}
		if name == o.name && pu.String() != o.advertise.String() {
			return o, fmt.Errorf("--cluster names %s at %s, %s says %s", name, pu, advertiseFlag, o.advertise)
		}
	}
	if !seen[o.name] {
		return o, fmt.Errorf("--cluster does not name this member (%s)", o.name)
	}
	return o, nil
}

// loopbackURL accepts http://LOOPBACK:PORT only: the members of this tool
// talk without TLS.
func loopbackURL(flag, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Port() == "" || u.Path != "" && u.Path != "/" || u.User != nil {
		return nil, fmt.Errorf("%s %q: want http://127.0.0.1:PORT", flag, raw)
	}
	if !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("%s %q: only loopback addresses are allowed", flag, raw)
	}
	u.Path = ""
	return u, nil
}

// runMember starts the member and serves until ctx ends or it fails.
func runMember(ctx context.Context, o memberOpts, errOut io.Writer) error {
	cfg := embed.NewConfig()
	cfg.Name = o.name
	cfg.Dir = o.dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*o.client}, []url.URL{*o.client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*o.peer}, []url.URL{*o.advertise}
	cfg.InitialCluster = o.cluster
	cfg.InitialClusterToken = "signd-cluster"
	cfg.LogLevel = "error"
	cfg.MaxTxnOps = 10000
	// embed.NewConfig leaves the slow-request threshold at 0, unlike the
	// etcd binary (300 ms): every request would count as slow, and the
	// server would format its whole content for a log line it then drops
	// (a tenth of its CPU under load).
	cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	cfg.MaxRequestBytes = etcd.MaxRequestBytes
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", o.name, err)
	}
	defer e.Close()
	// A member of a new cluster is ready once a quorum of its peers is up:
	// the others are started by the same script a moment later.
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(errOut, "etcd member %s ready: client %s\n", o.name, o.client)
	case err := <-e.Err():
		return fmt.Errorf("etcd %s: %w", o.name, err)
	case <-ctx.Done():
		return nil
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("etcd %s: no quorum after 2 minutes (are the other members running?)", o.name)
	}
	select {
	case err := <-e.Err():
		return fmt.Errorf("etcd %s: %w", o.name, err)
	case <-ctx.Done():
		return nil
	}
}
