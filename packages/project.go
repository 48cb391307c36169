package packages

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/internal/tomlbound"
)

// Project is a uv project found from a working folder.
type Project struct {
	// Dir holds the project's pyproject.toml.
	Dir string
	// Root is the workspace root: Dir, or the folder of the workspace
	// Dir is a member of. uv keeps the project environment there.
	Root string
	// Meta is what vis-agent reads of Dir's pyproject.toml.
	Meta Pyproject
}

// Pyproject holds the parts of a pyproject.toml that locate a project's
// environment and import roots.
type Pyproject struct {
	Project struct {
		Name string `toml:"name"`
	} `toml:"project"`
	BuildSystem struct {
		Backend string `toml:"build-backend"`
	} `toml:"build-system"`
	Tool struct {
		UV struct {
			Workspace *struct {
				Members []string `toml:"members"`
				Exclude []string `toml:"exclude"`
			} `toml:"workspace"`
			BuildBackend struct {
				ModuleRoot *string `toml:"module-root"`
			} `toml:"build-backend"`
		} `toml:"uv"`
		Setuptools struct {
			PackageDir map[string]string `toml:"package-dir"`
			Packages   struct {
				Find struct {
					Where []string `toml:"where"`
				} `toml:"find"`
			} `toml:"packages"`
		} `toml:"setuptools"`
		Hatch struct {
			Build struct {
				Targets struct {
					Wheel struct {
						Packages []string `toml:"packages"`
					} `toml:"wheel"`
				} `toml:"targets"`
			} `toml:"build"`
		} `toml:"hatch"`
		Poetry struct {
			Packages []struct {
				Include string `toml:"include"`
				From    string `toml:"from"`
			} `toml:"packages"`
		} `toml:"poetry"`
		PDM struct {
			Build struct {
				PackageDir *string `toml:"package-dir"`
			} `toml:"build"`
		} `toml:"pdm"`
		Pytest struct {
			IniOptions struct {
				PythonPath toml.Primitive `toml:"pythonpath"`
			} `toml:"ini_options"`
		} `toml:"pytest"`
	} `toml:"tool"`

	md toml.MetaData
}

// ReadPyproject parses a pyproject.toml.
func ReadPyproject(file string) (Pyproject, error) {
	var p Pyproject
	data, err := fsutil.ReadRegular(file, fsutil.MaxConfigBytes)
	if err != nil {
		return p, fmt.Errorf("read %s: %w", file, fsutil.Cause(err))
	}
	// A session may have written it: a crafted key's parse is the
	// writer's to choose (tomlbound).
	if err := tomlbound.Check(string(data)); err != nil {
		return p, fmt.Errorf("read %s: %w", file, err)
	}
	md, err := toml.Decode(string(data), &p)
	if err != nil {
		return p, fmt.Errorf("read %s: %w", file, err)
	}
	p.md = md
	return p, nil
}

// FindProject finds the uv project the folder dir belongs to, the way uv
// does: the nearest pyproject.toml at or above dir, and the workspace it is
// a member of. It returns nil when there is none.
func FindProject(dir string) (*Project, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	projectDir := fsutil.FindUp(dir, "pyproject.toml")
	if projectDir == "" {
		return nil, nil
	}
	file := filepath.Join(projectDir, "pyproject.toml")
	meta, err := ReadPyproject(file)
	if err != nil {
		return nil, pyprojectError(file, err)
	}
	p := &Project{Dir: projectDir, Root: projectDir, Meta: meta}
	if meta.Tool.UV.Workspace != nil {
		return p, nil
	}
	// A member's environment belongs to its workspace root: the nearest
	// pyproject.toml above it with a [tool.uv.workspace] (others are
	// passed over, as uv does), if that workspace names it as a member.
	for up := filepath.Dir(projectDir); ; {
		rootDir := fsutil.FindUp(up, "pyproject.toml")
		if rootDir == "" {
			return p, nil
		}
		root, err := ReadPyproject(filepath.Join(rootDir, "pyproject.toml"))
		if err == nil && root.Tool.UV.Workspace != nil {
			ws := root.Tool.UV.Workspace
			if isMember(rootDir, projectDir, ws.Members, ws.Exclude) {
				p.Root = rootDir
			}
			return p, nil
		}
		if up = filepath.Dir(rootDir); up == rootDir {
			return p, nil
		}
	}
}

// isMember reports whether dir matches one of the workspace member globs
// (relative to root) and none of the exclude globs.
func isMember(root, dir string, members, exclude []string) bool {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return false
	}
	rel = filepath.ToSlash(rel)
	match := func(globs []string) bool {
		for _, g := range globs {
			if ok, _ := path.Match(path.Clean(g), rel); ok {
				return true
			}
		}
		return false
	}
	return match(members) && !match(exclude)
}

// EnvironmentDir is where uv keeps the environment of p:
// UV_PROJECT_ENVIRONMENT when set (relative to the workspace root), else
// <workspace root>/.venv.
func EnvironmentDir(p *Project, uvProjectEnvironment string) string {
	if uvProjectEnvironment != "" {
		if filepath.IsAbs(uvProjectEnvironment) {
			return filepath.Clean(uvProjectEnvironment)
		}
		return filepath.Join(p.Root, uvProjectEnvironment)
	}
	return filepath.Join(p.Root, ".venv")
}
