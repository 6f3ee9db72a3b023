package clocktest

// ScaleFlagCase is a value given to a command's --time-scale flag and
// what the command must make of it: the factor, or an error containing
// WantErr.
type ScaleFlagCase struct {
	In      string
	Want    float64
	WantErr string
}

// ScaleFlagCases are the cases every command with a --time-scale flag
// (torpor-agent, torpor-relay) checks: 1 to 100000 is taken, anything
// else is an error naming the flag and the range, never quietly real time.
var ScaleFlagCases = []ScaleFlagCase{
	{"1", 1, ""},
	{"60", 60, ""},
	{"180", 180, ""},
	{"100000", 100000, ""},
	{"0", 0, `invalid value "0" for flag -time-scale: time scale 0 is out of range: want a number from 1 (real time) to 100000`},
	{"-5", 0, "time scale -5 is out of range"},
	{"-60", 0, "time scale -60 is out of range"},
	{"0.5", 0, "time scale 0.5 is out of range"},
	{"1e9", 0, "time scale 1e+09 is out of range"},
	{"NaN", 0, "time scale NaN is out of range"},
	{"+Inf", 0, "time scale +Inf is out of range"},
	{"-Inf", 0, "time scale -Inf is out of range"},
	{"fast", 0, `invalid value "fast" for flag -time-scale: time scale "fast" is not a number`},
}
