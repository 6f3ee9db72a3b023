package vm

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// Kernel is an extracted Debian arm64 kernel (scripts/qemu-kernel.sh).
type Kernel struct {
	Dir     string
	Vmlinuz string
	Modules string // the modules tree (lib/modules/<release>/kernel)
	Release string

	once  sync.Once
	index map[string]string // module name -> path relative to Modules
}

// FindKernel returns the cached kernel: $TORPOR_KERNEL_DIR if set, else
// what scripts/qemu-kernel.sh prints, which downloads it when missing.
func FindKernel(t testing.TB) *Kernel {
	t.Helper()
	dir := os.Getenv("TORPOR_KERNEL_DIR")
	if dir == "" {
		testenv.RequireTool(t, "apt-get")
		cmd := exec.Command("./scripts/qemu-kernel.sh")
		cmd.Dir = ModuleRoot(t)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			testenv.Unavailable(t, fmt.Sprintf("Debian arm64 kernel: scripts/qemu-kernel.sh: %v\n%s", err, stderr.String()))
		}
		dir = strings.TrimSpace(string(out))
	}
	k := &Kernel{Dir: dir, Vmlinuz: filepath.Join(dir, "vmlinuz"), Modules: filepath.Join(dir, "modules")}
	b, err := os.ReadFile(filepath.Join(dir, "release"))
	if err != nil {
		testenv.Unavailable(t, "no kernel in "+dir+": "+err.Error())
	}
	k.Release = strings.TrimSpace(string(b))
	return k
}

// ModuleDeps returns the modules to load for name, dependencies first, as
// paths relative to k.Modules. Dependencies come from each module's
// .modinfo section ("depends=a,b"), which is what depmod reads.
func (k *Kernel) ModuleDeps(name string) ([]string, error) {
	k.once.Do(k.buildIndex)
	var out []string
	seen := map[string]bool{}
	var visit func(string) error
	visit = func(n string) error {
		n = strings.ReplaceAll(n, "-", "_")
		if seen[n] {
			return nil
		}
		seen[n] = true
		rel, ok := k.index[n]
		if !ok {
			return fmt.Errorf("vm: kernel module %s not found in %s", n, k.Modules)
		}
		deps, err := moduleDepends(filepath.Join(k.Modules, rel))
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d); err != nil {
				return err
			}
		}
		out = append(out, rel)
		return nil
	}
	return out, visit(name)
}

func (k *Kernel) buildIndex() {
	k.index = map[string]string{}
	filepath.WalkDir(k.Modules, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ko") {
			return nil
		}
		rel, _ := filepath.Rel(k.Modules, p)
		k.index[strings.ReplaceAll(strings.TrimSuffix(d.Name(), ".ko"), "-", "_")] = rel
		return nil
	})
}

// moduleDepends reads the depends= entry of a module's .modinfo section.
func moduleDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("vm: %s has no .modinfo", path)
	}
	b, err := sec.Data()
	if err != nil {
		return nil, err
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d != "" {
					deps = append(deps, d)
				}
			}
			return deps, nil
		}
	}
	return nil, nil
}
