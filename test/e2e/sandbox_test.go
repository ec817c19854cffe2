/*
Copyright The events-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// The sandbox: the suite re-runs itself (the test binary, with the same
// flags) in new network, mount and PID namespaces. Every address the
// cluster uses is loopback or one the suite makes inside its network
// namespace (the CNI bridge cni0 at nodeIP, the pods' veths and network
// namespaces), so no packet can leave the machine and kube-proxy's rules stay
// inside; the paths containerd, the CNI plugins and the kubelet insist on
// (privateDirs) are tmpfs mounts in the private mount namespace; and when the
// suite's process ends, the kernel ends whatever it left in its PID
// namespace. Teardown still stops every process by pid and removes every
// mount, cgroup and interface it made, and checks that none is left.

const (
	// sandboxEnv marks the process running inside the sandbox.
	sandboxEnv = "EVENTS_E2E_SANDBOX"
	// bridgeName is the CNI bridge; its address is the node's.
	bridgeName = "cni0"
	// nodeIP is the bridge's (and the pods' gateway's) address: the node
	// IP, kube-apiserver's advertise address and the cluster DNS address.
	nodeIP = "10.88.0.1"
	// podSubnet is the pods' addresses (host-local IPAM on the bridge).
	podSubnet = "10.88.0.0/16"
	// serviceSubnet is the Services' cluster IPs.
	serviceSubnet = "10.96.0.0/16"
	// kubernetesServiceIP is the kubernetes Service's cluster IP.
	kubernetesServiceIP = "10.96.0.1"
	// cgroupPrefix names the kubelet's cgroup root in every hierarchy.
	cgroupPrefix = "events-e2e-"
)

// privateDirs are paths the components use whatever their configuration
// says (containerd's CRI network namespaces and runc state, the kubelet's
// device-plugin directory and container log links); each is a tmpfs in the
// sandbox's mount namespace.
var privateDirs = []string{
	"/run/netns",
	"/run/containerd",
	"/var/lib/cni",
	"/var/lib/kubelet",
	"/var/log/containers",
	"/etc/cni/net.d",
}

// runInSandbox re-runs the test binary in the sandbox and returns its exit
// code, after checking that it left no cgroup behind and removing the
// mount points it had to create.
func runInSandbox() int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "test/e2e: needs root (a kubelet, containerd and network namespaces); run it as root or skip it")
		return 1
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/e2e:", err)
		return 1
	}
	var created []string
	for _, d := range privateDirs {
		for p := d; p != "/"; p = filepath.Dir(p) {
			if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
				created = append(created, p)
			}
		}
	}
	cmd := exec.Command(unshare, append([]string{"--net", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private", "--"}, os.Args...)...)
	cmd.Env = append(os.Environ(), sandboxEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(os.Stderr, "test/e2e: running the sandbox:", err)
			return 1
		}
		code = exit.ExitCode()
	}
	// Deepest first; only the empty directories this run created.
	sort.Slice(created, func(i, j int) bool { return len(created[i]) > len(created[j]) })
	for _, p := range created {
		_ = os.Remove(p)
	}
	if left := leftCgroups(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "test/e2e: cgroups left behind: %s\n", strings.Join(left, " "))
		return 1
	}
	return code
}

// leftCgroups lists the kubelet cgroup roots in any hierarchy.
func leftCgroups() []string {
	matches, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroupPrefix + "*")
	return matches
}

// prepareSandbox runs first inside the sandbox: loopback up, the CNI
// bridge with the node address, the route for cluster IPs, forwarding and
// bridged traffic through iptables (kube-proxy's rules), and privateDirs.
func prepareSandbox() error {
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", nodeIP + "/16", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
		// Cluster IPs are translated by kube-proxy's OUTPUT rules; a
		// route must exist before they apply. Everything else that has
		// no route goes to the bridge, which leads nowhere but the pods.
		{"route", "add", "default", "dev", bridgeName},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	for path, value := range map[string]string{
		"/proc/sys/net/ipv4/ip_forward":                         "1",
		"/proc/sys/net/bridge/bridge-nf-call-iptables":          "1",
		"/proc/sys/net/bridge/bridge-nf-call-ip6tables":         "1",
		"/proc/sys/net/ipv4/conf/all/route_localnet":            "1",
		"/proc/sys/net/ipv4/conf/" + bridgeName + "/forwarding": "1",
	} {
		if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl %s: %w", path, err)
		}
	}
	for _, d := range privateDirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("mounting a tmpfs on %s: %w", d, err)
		}
	}
	return nil
}

// cleanSandbox undoes prepareSandbox: the bridge goes (with any veth still
// on it) and privateDirs are unmounted. It returns what is left.
func cleanSandbox() error {
	var errs []error
	if out, err := exec.Command("ip", "link", "del", bridgeName).CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("ip link del %s: %w: %s", bridgeName, err, out))
	}
	left, err := unmountAll(privateDirs...)
	if err != nil {
		errs = append(errs, err)
	}
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("still mounted: %s", strings.Join(left, " ")))
	}
	for _, kind := range []string{"bridge", "veth"} {
		if out, err := exec.Command("ip", "-o", "link", "show", "type", kind).Output(); err != nil || strings.TrimSpace(string(out)) != "" {
			errs = append(errs, fmt.Errorf("%s interfaces left: %s %v", kind, out, err))
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or under any of roots, deepest
// first, from /proc/self/mountinfo.
func mountsUnder(roots ...string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		for _, r := range roots {
			if mp == r || strings.HasPrefix(mp, r+"/") {
				mounts = append(mounts, mp)
				break
			}
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts, s.Err()
}

func unescapeMountinfo(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// unmountAll unmounts everything at or under roots (the deepest first) and
// returns what is still mounted.
func unmountAll(roots ...string) ([]string, error) {
	mounts, err := mountsUnder(roots...)
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		if err := syscall.Unmount(m, 0); err != nil {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
	return mountsUnder(roots...)
}
