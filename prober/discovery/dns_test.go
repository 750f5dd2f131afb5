package discovery

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// dnsNetnsEnv marks the test process that runs inside its own network and
// mount namespaces (see TestDNSSD).
const dnsNetnsEnv = "LLMPROBE_TEST_DNS_NETNS"

// TestDNSSD runs dns_sd against a DNS server in the test, with SRV and A
// records. Prometheus' dns_sd asks the servers of /etc/resolv.conf on port
// 53 and has no setting for another resolver, so the test runs itself again
// inside new user, mount and network namespaces (unshare -rmn): there
// /etc/resolv.conf is a bind mount naming 127.0.0.1 and the test's server
// listens on the namespace's own 127.0.0.1:53. Where namespaces are not
// allowed the test is skipped, saying so.
func TestDNSSD(t *testing.T) {
	if os.Getenv(dnsNetnsEnv) == "1" {
		dnsSDInNamespace(t)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("dns_sd needs unshare(1) to run with its own /etc/resolv.conf and port 53:", err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("dns_sd needs ip(8) to bring up a network namespace's loopback:", err)
	}
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := exec.Command(unshare, "-rmn", "true")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("namespaces are not allowed here (unshare -rmn: %v: %s): dns_sd not tested", err, out)
	}
	cmd := exec.Command(unshare, "-rmn", "sh", "-c",
		`ip link set lo up && mount --bind "$1" /etc/resolv.conf && exec "$2" -test.run='^TestDNSSD$' -test.v -test.count=1`,
		"sh", resolv, os.Args[0])
	cmd.Env = append(os.Environ(), dnsNetnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("inside the namespaces:\n%s", out)
	if err != nil {
		t.Fatalf("dns_sd test inside the namespaces: %v", err)
	}
}

// dnsZone is the test's DNS server's records, changeable while it serves.
type dnsZone struct {
	mu  sync.Mutex
	srv map[string][]*dns.SRV
	a   map[string][]string
}

func (z *dnsZone) serve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	z.mu.Lock()
	for _, q := range req.Question {
		switch q.Qtype {
		case dns.TypeSRV:
			for _, s := range z.srv[q.Name] {
				rr := *s
				rr.Hdr = dns.RR_Header{Name: q.Name, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: 1}
				m.Answer = append(m.Answer, &rr)
			}
		case dns.TypeA:
			for _, ip := range z.a[q.Name] {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1},
					A: net.ParseIP(ip)})
			}
		}
	}
	z.mu.Unlock()
	if len(m.Answer) == 0 {
		m.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

// dnsSDInNamespace is TestDNSSD inside the namespaces: a DNS server on
// 127.0.0.1:53 (UDP and TCP) with SRV and A records, and a discovery
// entry with one dns_sd config of each type.
func dnsSDInNamespace(t *testing.T) {
	zone := &dnsZone{
		srv: map[string][]*dns.SRV{"_http._tcp.vllm.llm.test.": {
			{Target: "vllm-0.llm.test.", Port: 8000}, {Target: "vllm-1.llm.test.", Port: 8000}}},
		a: map[string][]string{"gw.llm.test.": {"10.3.0.1", "10.3.0.2"}},
	}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", zone.serve)
	for _, network := range []string{"udp", "tcp"} {
		started := make(chan struct{})
		s := &dns.Server{Addr: "127.0.0.1:53", Net: network, Handler: mux, NotifyStartedFunc: func() { close(started) }}
		errc := make(chan error, 1)
		go func() { errc <- s.ListenAndServe() }()
		select {
		case <-started:
		case err := <-errc:
			t.Fatalf("DNS server (%s): %v", network, err)
		}
		t.Cleanup(func() {
			if err := s.Shutdown(); err != nil && !errors.Is(err, net.ErrClosed) {
				t.Error(err)
			}
			<-errc
		})
	}
	r, _ := run(t, `
discovery:
  - name: dns
    dns_sd_configs:
      - names: [_http._tcp.vllm.llm.test]
        refresh_interval: 100ms
      - names: [gw.llm.test]
        type: A
        port: 8080
        refresh_interval: 100ms
    relabel_configs:
      - source_labels: [__meta_dns_name]
        target_label: dns_name
`)
	ts := waitTargets(t, r, nil, "dns:vllm-0.llm.test:8000", "dns:vllm-1.llm.test:8000", "dns:10.3.0.1:8080", "dns:10.3.0.2:8080")
	for _, tt := range ts {
		if tt.Labels["dns_name"] == "" {
			t.Errorf("%s: no dns_name label: %v", tt.Config.Name, tt.Labels)
		}
	}
	zone.mu.Lock()
	zone.srv["_http._tcp.vllm.llm.test."] = zone.srv["_http._tcp.vllm.llm.test."][1:]
	zone.a["gw.llm.test."] = []string{"10.3.0.2"}
	zone.mu.Unlock()
	waitTargets(t, r, nil, "dns:vllm-1.llm.test:8000", "dns:10.3.0.2:8080")
}
