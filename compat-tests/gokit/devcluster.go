package gokit

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	bootstrapRe = regexp.MustCompile(`bootstrap servers: (\S+)`)
	nodeRe      = regexp.MustCompile(`node (\d+) pid (\d+) listening`)
	passwordRe  = regexp.MustCompile(`admin user: admin password: (\S+)`)
)

// DevCluster is a `sluice dev-cluster` process and the nodes it started.
type DevCluster struct {
	Bootstrap []string
	Pids      map[int32]int // node id -> pid
	// AdminPassword and CAFile are set for a --security sasl_ssl cluster.
	AdminPassword, CAFile string
	p                     *proc
	dir                   string
}

// StartDevCluster starts `sluice dev-cluster --brokers n` on free ports with extra arguments
// (e.g. "--security", "sasl_ssl") and waits until it has printed every node.
func StartDevCluster(n int, extra ...string) (*DevCluster, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-gokit-dev-")
	if err != nil {
		return nil, err
	}
	base, err := freeBasePort(n)
	if err != nil {
		return nil, err
	}
	args := append([]string{"dev-cluster", "--brokers", strconv.Itoa(n), "--base-port", strconv.Itoa(base),
		"--data-dir", filepath.Join(dir, "data"), "--set", "group.initial.rebalance.delay.ms=0"}, extra...)
	lastNode := regexp.MustCompile(fmt.Sprintf(`node %d pid \d+ listening`, n))
	p, _, err := start(lastNode, 90*time.Second, bin, args...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	out := p.Output()
	d := &DevCluster{Pids: map[int32]int{}, p: p, dir: dir}
	if m := bootstrapRe.FindStringSubmatch(out); m != nil {
		d.Bootstrap = strings.Split(m[1], ",")
	}
	for _, m := range nodeRe.FindAllStringSubmatch(out, -1) {
		id, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		d.Pids[int32(id)] = pid
	}
	if m := passwordRe.FindStringSubmatch(out); m != nil {
		d.AdminPassword = m[1]
		d.CAFile = filepath.Join(dir, "data", "tls", "ca.pem")
	}
	if len(d.Bootstrap) != n || len(d.Pids) != n {
		d.Stop()
		return nil, fmt.Errorf("dev-cluster printed %v and nodes %v:\n%s", d.Bootstrap, d.Pids, out)
	}
	return d, nil
}

// Kill sends SIGKILL to one node; dev-cluster and the other nodes keep running.
func (d *DevCluster) Kill(node int32) error {
	pid, ok := d.Pids[node]
	if !ok {
		return fmt.Errorf("no node %d in %v", node, d.Pids)
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// Log is dev-cluster's own output followed by every node's sluice.log.
func (d *DevCluster) Log() string {
	var b strings.Builder
	b.WriteString(d.p.Output())
	for id := range d.Pids {
		path := filepath.Join(d.dir, "data", fmt.Sprintf("node-%d", id), "sluice.log")
		if data, err := os.ReadFile(path); err == nil {
			fmt.Fprintf(&b, "\n===== %s\n%s", path, data)
		}
	}
	return b.String()
}

// Stop stops dev-cluster (which stops its nodes) and removes its data.
func (d *DevCluster) Stop() error {
	err := d.p.stop()
	// A node that outlived dev-cluster would keep its ports: make sure none does.
	for _, pid := range d.Pids {
		if syscall.Kill(pid, 0) == nil && strings.Contains(cmdline(pid), d.dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	os.RemoveAll(d.dir)
	return err
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(b)
}

// freeBasePort finds P such that dev-cluster's client (P+i), controller (P+100+i) and HTTP
// (P+200+i) ports are all free.
func freeBasePort(n int) (int, error) {
	for try := 0; try < 500; try++ {
		base := 20000 + rand.IntN(40000)
		free := true
		for _, off := range []int{0, 100, 200} {
			for i := 0; i < n && free; i++ {
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off+i))
				if err != nil {
					free = false
					break
				}
				l.Close()
			}
		}
		if free {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no free base port for %d nodes", n)
}

// TLSConfig trusts the CA of a --security cluster.
func (d *DevCluster) TLSConfig() (*tls.Config, error) {
	pem, err := os.ReadFile(d.CAFile)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", d.CAFile)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}
