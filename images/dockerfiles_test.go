// Package images holds the Dockerfiles of the project's images. Its tests check that the
// Docker builds of the CouchDB preset images (images/couchdb-python, images/couchdb-pypy)
// and hack/couchdb-images.sh, which builds the same images without Docker, read the same
// inputs: package list, pinned requirements, pip options and ENV; and that every build stage
// is written so that hack/images.sh can keep it as a cache and prune what rebuilds replace.
package images

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// localBuild is one image built on CouchDB as `hack/couchdb-images.sh describe` prints it.
type localBuild struct {
	image        string
	couchdb      string // CouchDB release the image is built on
	packages     string // package list, relative to the repository root
	requirements string // pip requirements, relative to the repository root
	pip          []string
	pipTarget    string
	env          map[string]string
}

// describe runs the local build's describe command and returns the images that have
// packages and requirements, keyed by their directory under images/.
func describe(t *testing.T) map[string]localBuild {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join("..", "hack", "couchdb-images.sh"), "describe").Output()
	if err != nil {
		t.Fatalf("hack/couchdb-images.sh describe: %v", err)
	}
	builds := map[string]localBuild{}
	for block := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n\n") {
		b := localBuild{env: map[string]string{}}
		for line := range strings.SplitSeq(block, "\n") {
			key, value, _ := strings.Cut(line, " ")
			switch key {
			case "image":
				b.image = value
			case "couchdb":
				b.couchdb = value
			case "packages":
				b.packages = value
			case "requirements":
				b.requirements = value
			case "pip":
				b.pip = strings.Fields(value)
			case "pip-target":
				b.pipTarget = value
			case "env":
				k, v, _ := strings.Cut(value, "=")
				b.env[k] = v
			default:
				t.Fatalf("describe: unknown line %q", line)
			}
		}
		if b.packages == "" {
			continue // a plain CouchDB image: no Dockerfile of ours
		}
		builds[path.Base(path.Dir(b.packages))] = b
	}
	return builds
}

type instruction struct {
	cmd  string // upper case: FROM, COPY, RUN, ENV, ...
	args string
}

type stage struct {
	from, name string
	instrs     []instruction
}

// parseDockerfile splits a Dockerfile into stages of instructions, joining continuation
// lines and dropping comments.
func parseDockerfile(text string) []stage {
	var stages []stage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			return
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if body, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return stages
}

// words splits shell text into words, honouring single and double quotes.
func words(s string) []string {
	var out []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, w.String())
	}
	return out
}

// commands splits a RUN instruction into its simple commands (at &&, || and ;).
func commands(run string) [][]string {
	var cmds [][]string
	var cur []string
	for _, w := range words(run) {
		w, semi := strings.CutSuffix(w, ";")
		if w == "&&" || w == "||" {
			w = ""
		}
		if w != "" {
			cur = append(cur, w)
		}
		if w == "" || semi {
			if len(cur) > 0 {
				cmds = append(cmds, cur)
			}
			cur = nil
		}
	}
	if len(cur) > 0 {
		cmds = append(cmds, cur)
	}
	return cmds
}

// env returns the ENV settings of a stage (KEY=VALUE forms and the legacy KEY VALUE form).
func (s stage) env() map[string]string {
	env := map[string]string{}
	for _, in := range s.instrs {
		if in.cmd != "ENV" {
			continue
		}
		ws := words(in.args)
		if len(ws) > 0 && !strings.Contains(ws[0], "=") {
			env[ws[0]] = strings.Join(ws[1:], " ")
			continue
		}
		for _, w := range ws {
			k, v, _ := strings.Cut(w, "=")
			env[k] = v
		}
	}
	return env
}

// copyDest is where the stage's COPY (from the build context) puts the file src, or "".
func (s stage) copyDest(src string) string {
	for _, in := range s.instrs {
		ws := words(in.args)
		if in.cmd != "COPY" || len(ws) < 2 || strings.HasPrefix(ws[0], "--from=") {
			continue
		}
		dest := ws[len(ws)-1]
		if slices.Contains(ws[:len(ws)-1], src) {
			if strings.HasSuffix(dest, "/") {
				return dest + path.Base(src)
			}
			return dest
		}
	}
	return ""
}

// runs returns the simple commands of every RUN of the stage.
func (s stage) runs() [][]string {
	var cmds [][]string
	for _, in := range s.instrs {
		if in.cmd == "RUN" {
			cmds = append(cmds, commands(in.args)...)
		}
	}
	return cmds
}

func isAptInstall(cmd []string) (int, bool) {
	for i := 0; i+1 < len(cmd); i++ {
		if cmd[i] == "apt-get" && cmd[i+1] == "install" {
			return i, true
		}
	}
	return 0, false
}

func isPipInstall(cmd []string) bool {
	return len(cmd) >= 2 && (cmd[0] == "pip3" || cmd[0] == "pip") && cmd[1] == "install"
}

// checkImage lists every way the Dockerfile of an image differs from its local build.
func checkImage(dockerfile string, b localBuild) []string {
	var errs []string
	fail := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	stages := parseDockerfile(dockerfile)
	if len(stages) == 0 {
		return []string{"no FROM"}
	}
	final := stages[len(stages)-1]

	if want := "couchdb:" + b.couchdb; final.from != want {
		fail("image is built FROM %s, the local build on %s", final.from, want)
	}
	if got := final.env(); !reflect.DeepEqual(got, b.env) {
		fail("ENV %v, the local build sets %v", got, b.env)
	}

	// Debian packages: only the list file, through xargs, in the image's own stage.
	list := final.copyDest(b.packages)
	if list == "" {
		fail("the final stage does not COPY %s", b.packages)
	}
	fromList := 0
	for _, cmd := range final.runs() {
		i, ok := isAptInstall(cmd)
		if !ok {
			continue
		}
		viaList := i == 3 && cmd[0] == "xargs" && cmd[1] == "-a" && cmd[2] == list
		for _, w := range cmd[i+2:] {
			if !strings.HasPrefix(w, "-") {
				fail("apt-get install names package %q: packages come from %s only", w, b.packages)
			}
		}
		if !viaList {
			fail("%q does not install the packages of %s", strings.Join(cmd, " "), b.packages)
			continue
		}
		fromList++
	}
	if fromList != 1 {
		fail("%d apt-get installs read %s, want 1", fromList, b.packages)
	}

	// Python packages: one pip3 install, of the requirements file, with the local build's options.
	pips := 0
	for si, s := range stages {
		for _, cmd := range s.runs() {
			if !isPipInstall(cmd) {
				continue
			}
			pips++
			var opts []string
			req, target := "", ""
			for i := 2; i < len(cmd); i++ {
				switch {
				case (cmd[i] == "-r" || cmd[i] == "--target") && i+1 < len(cmd):
					if cmd[i] == "-r" {
						req = cmd[i+1]
					} else {
						target = cmd[i+1]
					}
					i++
				default:
					opts = append(opts, cmd[i])
				}
			}
			if want := s.copyDest(b.requirements); req == "" || req != want {
				fail("pip3 install -r %q, want the COPY of %s (%q)", req, b.requirements, want)
			}
			if !slices.Equal(opts, b.pip) {
				fail("pip3 install options %q, the local build uses %q", opts, b.pip)
			}
			if target != b.pipTarget {
				fail("pip3 install --target %q, the local build installs into %q", target, b.pipTarget)
			}
			if si == len(stages)-1 {
				continue
			}
			// Installed in a builder stage: the image must copy exactly that directory.
			want := fmt.Sprintf("--from=%s %s %s", s.name, target, target)
			copied := false
			for _, in := range final.instrs {
				copied = copied || (in.cmd == "COPY" && strings.Join(words(in.args), " ") == want)
			}
			if !copied {
				fail("the final stage does not COPY %s", want)
			}
		}
	}
	if pips != 1 {
		fail("%d pip3 installs, want 1", pips)
	}
	return errs
}

var (
	packageName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
	pinned      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!]+$`)
)

// checkLists checks the list files: one Debian package per line, and pins with == only
// (the local build's cache key is the file's content, so a range would go stale).
func checkLists(packages, requirements string) []string {
	var errs []string
	for l := range strings.Lines(packages) {
		if l = strings.TrimSpace(l); l != "" && !packageName.MatchString(l) {
			errs = append(errs, fmt.Sprintf("package list line %q is not one package name", l))
		}
	}
	for l := range strings.Lines(requirements) {
		if l = strings.TrimSpace(l); l != "" && !pinned.MatchString(l) {
			errs = append(errs, fmt.Sprintf("requirement %q is not pinned as NAME==VERSION", l))
		}
	}
	return errs
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDockerfilesMatchLocalBuild(t *testing.T) {
	builds := describe(t)
	var dirs []string
	for _, f := range []string{"packages.txt", "requirements.txt", "Dockerfile"} {
		m, _ := filepath.Glob(filepath.Join("*", f))
		for _, p := range m {
			if d := filepath.Dir(p); strings.HasPrefix(d, "couchdb-") && !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	slices.Sort(dirs)
	described := slices.Sorted(func(yield func(string) bool) {
		for d := range builds {
			if !yield(d) {
				return
			}
		}
	})
	if !slices.Equal(dirs, described) {
		t.Fatalf("images/couchdb-* directories %v, hack/couchdb-images.sh builds %v", dirs, described)
	}
	for dir, b := range builds {
		t.Run(dir, func(t *testing.T) {
			errs := checkLists(read(t, b.packages), read(t, b.requirements))
			errs = append(errs, checkImage(read(t, "images/"+dir+"/Dockerfile"), b)...)
			for _, e := range errs {
				t.Errorf("images/%s/Dockerfile vs hack/couchdb-images.sh (%s): %s", dir, b.image, e)
			}
		})
	}
}

// TestCheckImageFindsDifferences makes sure each kind of drift between a Dockerfile and
// the local build is reported, starting from the real files.
func TestCheckImageFindsDifferences(t *testing.T) {
	builds := describe(t)
	cases := []struct{ dir, name, old, new string }{
		{"couchdb-python", "inline pin", "-r /tmp/couchdb-python/requirements.txt", "-r /tmp/couchdb-python/requirements.txt simplejson==3.19.3"},
		{"couchdb-python", "inline package", "--no-install-recommends \\", "--no-install-recommends python3-dev \\"},
		{"couchdb-python", "other ENV", `ENV COUCHDB_QUERY_SERVER_PYTHON="/usr/local/bin/couchpy"`, `ENV COUCHDB_QUERY_SERVER_PYTHON="/usr/bin/couchpy"`},
		{"couchdb-python", "extra ENV", `ENV COUCHDB_QUERY_SERVER_PYTHON=`, `ENV PYTHONOPTIMIZE=1 COUCHDB_QUERY_SERVER_PYTHON=`},
		{"couchdb-python", "pip option dropped", " --break-system-packages", ""},
		{"couchdb-python", "other CouchDB", "FROM couchdb:3.4.3", "FROM couchdb:3.5.1"},
		{"couchdb-python", "packages not from the list", "xargs -a /tmp/couchdb-python/packages.txt apt-get install", "apt-get install python3"},
		{"couchdb-pypy", "other pip target", "--target /usr/local/lib/pypy3.9/dist-packages", "--target /usr/lib/pypy3/dist-packages"},
		{"couchdb-pypy", "builder output not copied", "COPY --from=couchpy", "COPY --from=other"},
		{"couchdb-pypy", "CPython wheels", "--implementation pp ", ""},
		{"couchdb-pypy", "other ENV", `"/usr/bin/pypy3 -m couchdb.view"`, `"pypy3 /usr/local/bin/couchpy"`},
	}
	for _, c := range cases {
		t.Run(c.dir+"/"+c.name, func(t *testing.T) {
			b, ok := builds[c.dir]
			if !ok {
				t.Fatalf("describe has no %s", c.dir)
			}
			orig := read(t, "images/"+c.dir+"/Dockerfile")
			if errs := checkImage(orig, b); len(errs) > 0 {
				t.Fatalf("the real Dockerfile already fails: %v", errs)
			}
			mutated := strings.Replace(orig, c.old, c.new, 1)
			if mutated == orig {
				t.Fatalf("%q is not in images/%s/Dockerfile", c.old, c.dir)
			}
			if errs := checkImage(mutated, b); len(errs) == 0 {
				t.Errorf("no difference reported after replacing %q with %q", c.old, c.new)
			}
		})
	}
	if errs := checkLists("python3 python3-pip\n", "CouchDB==1.2\nsimplejson>=3.19\n"); len(errs) != 2 {
		t.Errorf("checkLists: %v, want a package-name and a pin error", errs)
	}
}

// TestBuildStagesArePrunable holds every Dockerfile to what hack/images.sh expects of a build
// stage: named on a FROM line of the form "FROM <image> AS <name>" (the form the script finds
// stage names by, to tag them as the next build's cache) and labelled couchbench.build=stage
// (the label the script prunes the replaced copies by). A stage without either would be left
// dangling by every rebuild, about a gigabyte each for the Go stages.
func TestBuildStagesArePrunable(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("*", "Dockerfile"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no images/*/Dockerfile (%v)", err)
	}
	named := 0
	for _, f := range files {
		text := read(t, "images/"+filepath.ToSlash(f))
		for _, s := range parseDockerfile(text) {
			if s.name == "" {
				continue
			}
			named++
			if !regexp.MustCompile(`(?m)^FROM \S+ AS ` + regexp.QuoteMeta(s.name) + `$`).MatchString(text) {
				t.Errorf("%s: write stage %s's line as \"FROM <image> AS %s\", the form hack/images.sh finds stages by", f, s.name, s.name)
			}
			labelled := slices.ContainsFunc(s.instrs, func(in instruction) bool {
				return in.cmd == "LABEL" && slices.Contains(strings.Fields(in.args), "couchbench.build=stage")
			})
			if !labelled {
				t.Errorf("%s: stage %s has no LABEL couchbench.build=stage: hack/images.sh would never prune the copies rebuilds replace", f, s.name)
			}
		}
	}
	if named == 0 {
		t.Fatal("no named build stage in images/*/Dockerfile: this check holds nothing")
	}
}
