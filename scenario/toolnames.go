package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/llmproxy/llmproxy/presets"
)

// This file gives preset calls the application's own function names: the
// as key of a fixture or a preset call, and NameTools (mock --map).

// functionPattern is what a function name given by as may be: what every
// provider accepts as a tool's name.
var functionPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// checkAs checks the as of a fixture or a preset call.
func checkAs(p *problems, l loc, as string) {
	if as != "" && !functionPattern.MatchString(as) {
		p.add(l, "%q is not a function name: 1 to 64 letters, digits, '_', '.', ':' or '-'", as)
	}
}

// unknownPreset says that name is no preset, suggesting as: when name looks
// like the application's name for one (get_weather, getWeather, wether).
func unknownPreset(name string) string {
	msg := fmt.Sprintf("unknown preset %q", name)
	if near := nearPreset(name); near != "" {
		return msg + fmt.Sprintf(" (if it is the application's name for the %s preset, write preset: %s, as: %s)", near, near, name)
	}
	return msg + " (llmproxy presets lists them)"
}

// nearPreset returns the preset whose name name contains (letters and digits
// only, case aside) or is within two edits of, if one is.
func nearPreset(name string) string {
	letters := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			if r >= 'A' && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return -1
		}, s)
	}
	flat := letters(name)
	var names []string
	for _, d := range presets.All() {
		if flat != "" && strings.Contains(flat, letters(d.Name())) {
			return d.Name()
		}
		names = append(names, d.Name())
	}
	return nearest(name, names)
}

// NameTools gives the preset calls of s the application's function names,
// as mock --map does: names maps a function name to a preset's
// (get_weather → weather), and every fixture and preset call of that preset
// without an As of its own takes the function name. Two names for one
// preset, or a preset that does not exist, is an error wrapping ErrInvalid
// (or presets.ErrUnknownPreset) and s is left as it was.
func (s *Scenario) NameTools(names map[string]string) error {
	byPreset := map[string]string{}
	for _, function := range sortedKeys(names) {
		preset := names[function]
		if _, ok := presets.Lookup(preset); !ok {
			return fmt.Errorf("scenario %s: %s=%s: %w %q", s.Name, function, preset, presets.ErrUnknownPreset, preset)
		}
		if other, dup := byPreset[preset]; dup {
			return fmt.Errorf("scenario %s: %s=%s: %w: the preset %s is already named %s; a preset has one name in a scenario",
				s.Name, function, preset, ErrInvalid, preset, other)
		}
		if !functionPattern.MatchString(function) {
			return fmt.Errorf("scenario %s: %s=%s: %w: %q is not a function name", s.Name, function, preset, ErrInvalid, function)
		}
		byPreset[preset] = function
	}
	for i := range s.Fixtures {
		if f := &s.Fixtures[i]; f.As == "" && byPreset[f.Preset] != "" && byPreset[f.Preset] != f.Preset {
			f.As = byPreset[f.Preset]
		}
	}
	for i := range s.Steps {
		for k := range s.Steps[i].Respond.ToolCalls {
			if c := &s.Steps[i].Respond.ToolCalls[k]; c.Preset != "" && c.As == "" && byPreset[c.Preset] != "" && byPreset[c.Preset] != c.Preset {
				c.As = byPreset[c.Preset]
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// function is the name a fixture's call takes: its As, else the preset's.
func (f *Fixture) function() string {
	if f.As != "" {
		return f.As
	}
	return f.Preset
}
