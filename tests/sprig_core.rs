//! Sprig functions (strings, lists, dicts, math, regex, encoding, semver,
//! reflection, URLs, paths, defaults) run through the template engine against
//! fixed vectors captured from real Helm v3.17.2 with `helm-probe`.
use rudder::template::{Engine, EngineOptions, Value};

const NAME: &str = "conf/templates/probe.txt";

/// (template, Ok(output) or Err(error core))
const VECTORS: &[(&str, Result<&str, &str>)] = &[
    (
        r#"{{ abbrev 5 "hello world" }}|{{ abbrev 3 "hello" }}|{{ abbrevboth 5 10 "1234 5678 9123" }}|{{ abbrevboth 0 4 "abcdefg" }}"#,
        Ok(r#"he...|hello|...5678...|a..."#),
    ),
    (
        r#"{{ repeat 3 "ab" }}|{{ "x" | repeat 2 }}|{{ nospace "a b\tc" }}|{{ initials "Hello big World" }}"#,
        Ok(r#"ababab|xx|abc|HbW"#),
    ),
    (
        r#"{{ untitle "Hello World" }}|{{ title "élan vital" }}|{{ upper "straße" }}|{{ lower "ÀÉ" }}"#,
        Ok(r#"hello world|Élan Vital|STRAßE|àé"#),
    ),
    (
        r#"{{ repeat -1 "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <repeat -1 "x">: error calling repeat: strings: negative Repeat count"#,
        ),
    ),
    (
        r#"{{ squote "a" 1 nil 2.5 }}|{{ quote }}|{{ squote (list 1 2) }}|{{ quote (list 1 "a") }}"#,
        Ok(r#"'a' '1' '2.5'||'[1 2]'|"[1 a]""#),
    ),
    (
        r#"{{ cat "a" (list 1 2) (dict "k" 1) }}"#,
        Ok(r#"a [1 2] map[k:1]"#),
    ),
    (
        r#"{{ replace "a" "b" "banana" }}|{{ replace "" "-" "abc" }}"#,
        Ok(r#"bbnbnb|-a-b-c-"#),
    ),
    (
        r#"{{ splitn "/" 2 "a/b/c" }}|{{ split "" "ab" }}|{{ (split "," "x,y")._1 }}"#,
        Ok(r#"map[_0:a _1:b/c]|map[_0:a _1:b]|y"#),
    ),
    (
        r#"{{ sortAlpha "b" }}|{{ sortAlpha (dict "a" 1) }}|{{ toStrings "x" }}|{{ toStrings nil }}|{{ toStrings (dict "a" 1) }}"#,
        Ok(r#"[b]|[map[a:1]]|[x]|[]|[map[a:1]]"#),
    ),
    (
        r#"{{ trunc 2 "" }}|{{ substr 0 0 "abc" }}|{{ substr 1 1 "abc" }}|{{ substr -5 2 "abc" }}"#,
        Ok(r#"|||ab"#),
    ),
    (
        r#"{{ wrap 3 "a bb ccc dddd" }}|{{ wrap 0 "a b" }}|{{ wrapWith 4 "<br>" "aaaaaaaa bb" }}"#,
        Ok(r#"a
bb
ccc
dddd|a
b|aaaa<br>aaaa<br>bb"#),
    ),
    (
        r#"{{ plural "a" "b" -1 }}|{{ indent -1 "x" }}|{{ nindent 0 "" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:27: executing "conf/templates/probe.txt" at <indent -1 "x">: error calling indent: strings: negative Repeat count"#,
        ),
    ),
    (
        r#"{{ last (list 1 2 3) }}|{{ last (list) }}|{{ first (list) }}|{{ last "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:64: executing "conf/templates/probe.txt" at <last "x">: error calling last: Cannot find last on type string"#,
        ),
    ),
    (
        r#"{{ slice (list 1 2 3) 1 }}|{{ slice (list 1 2 3) }}|{{ slice (list) 0 0 }}|{{ mustSlice (list 1 2 3) 0 2 }}|{{ typeOf (slice (splitList "," "a,b") 1) }}"#,
        Ok(r#"[2 3]|[1 2 3]||[1 2]|[]string"#),
    ),
    (
        r#"{{ slice (list 1 2 3) 2 1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <slice (list 1 2 3) 2 1>: error calling slice: reflect.Value.Slice: slice index out of bounds"#,
        ),
    ),
    (
        r#"{{ concat (list 1) "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <concat (list 1) "x">: error calling concat: Cannot concat type string as list"#,
        ),
    ),
    (
        r#"{{ concat (list 1) nil }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <concat (list 1) nil>: error calling concat: runtime error: invalid memory address or nil pointer dereference"#,
        ),
    ),
    (
        r#"{{ append "x" 1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <append "x" 1>: error calling append: Cannot push on type string"#,
        ),
    ),
    (
        r#"{{ prepend nil 1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <prepend nil 1>: error calling prepend: runtime error: invalid memory address or nil pointer dereference"#,
        ),
    ),
    (
        r#"{{ uniq (list (list 1) (list 1) (dict "a" 1) (dict "a" 1)) }}|{{ has (list 1) (list (list 1)) }}|{{ without (list "a" "b") "a" }}"#,
        Ok(r#"[[1] map[a:1]]|true|[b]"#),
    ),
    (
        r#"{{ has 1 "abc" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <has 1 "abc">: error calling has: Cannot find has on type string"#,
        ),
    ),
    (
        r#"{{ compact "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <compact "x">: error calling compact: Cannot compact on type string"#,
        ),
    ),
    (
        r#"{{ chunk 2 "abc" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <chunk 2 "abc">: error calling chunk: Cannot chunk type string"#,
        ),
    ),
    (
        r#"{{ reverse nil }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <reverse nil>: error calling reverse: runtime error: invalid memory address or nil pointer dereference"#,
        ),
    ),
    (
        r#"{{ pluck "a" (dict "a" 1) (dict "b" 2) (dict "a" 3) }}|{{ values (dict "b" 2 "a" 1) | sortAlpha }}|{{ typeOf (values (dict)) }}|{{ keys (dict "b" 1) (dict "a" 2) | sortAlpha }}"#,
        Ok(r#"[1 3]|[1 2]|[]interface {}|[a b]"#),
    ),
    (
        r#"{{ $d := dict "a" (dict "b" 1) }}{{ $c := deepCopy $d }}{{ $_ := set $c.a "b" 2 }}{{ $d }}|{{ $c }}|{{ deepCopy nil }}|{{ typeOf (deepCopy .Values) }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:103: executing "conf/templates/probe.txt" at <deepCopy nil>: error calling deepCopy: reflect: call of reflect.Value.Type on zero Value"#,
        ),
    ),
    (
        r#"{{ dig "a" "b" "c" "d" (dict "a" (dict "b" (dict "c" 5))) }}|{{ dig "x" 7 (dict) }}|{{ dig "a" "b" "z" (dict "a" (dict "b" nil)) }}"#,
        Ok(r#"5|7|"#),
    ),
    (r#"{{ dig "a" "z" (dict "a" nil) }}"#, Ok(r#""#)),
    (
        r#"{{ dig "a" (dict) }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <dig "a" (dict)>: error calling dig: dig needs at least three arguments"#,
        ),
    ),
    (
        r#"{{ dig 1 "z" (dict) }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <dig 1 "z" (dict)>: error calling dig: interface conversion: interface {} is int, not string"#,
        ),
    ),
    (
        r#"{{ dig "a" "z" nil }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <dig "a" "z" nil>: error calling dig: interface conversion: interface {} is nil, not map[string]interface {}"#,
        ),
    ),
    (r#"{{ merge (dict) nil }}"#, Ok(r#"map[]"#)),
    (r#"{{ merge nil (dict "a" 1) }}"#, Ok(r#"map[a:1]"#)),
    (
        r#"{{ mustMerge (dict "a" 1) (dict "a" 2 "b" (list)) }}|{{ mustMergeOverwrite (dict "a" (dict "x" 1)) (dict "a" (dict)) }}|{{ mergeOverwrite (dict "a" 1) (dict "a" nil) }}|{{ merge (dict "a" nil) (dict "a" 0) }}"#,
        Ok(r#"map[a:1 b:[]]|map[a:map[x:1]]|map[a:<nil>]|map[a:0]"#),
    ),
    (
        r#"{{ div 7 2 }}|{{ div -7 2 }}|{{ mod -7 2 }}|{{ div 1.9 1 }}|{{ sub "10" "3" }}|{{ add "0x10" 1 }}|{{ mul "2" "3.0" }}"#,
        Ok(r#"3|-3|-1|1|7|17|6"#),
    ),
    (
        r#"{{ div 1 0 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <div 1 0>: error calling div: runtime error: integer divide by zero"#,
        ),
    ),
    (
        r#"{{ add1 "x" }}|{{ biggest 1 2.9 }}|{{ min 1 }}|{{ max "5" 3 }}|{{ maxf "1.5" 2 }}|{{ minf nil 1 }}"#,
        Ok(r#"1|2|1|5|2|0"#),
    ),
    (
        r#"{{ addf 1.1 2.2 }}|{{ subf 10 0.1 0.2 }}|{{ mulf 1.1 1.1 }}|{{ divf 10 4 }}|{{ divf 2 3 }}|{{ add1f 0.1 }}|{{ addf }}|{{ typeOf (addf 1) }}"#,
        Ok(r#"3.3|9.7|1.21|2.5|0.6666666666666667|1.1|0|float64"#),
    ),
    (
        r#"{{ divf 10 3 }}|{{ divf 1 7 }}|{{ divf 123456789 0.001 }}|{{ mulf 1e10 1e10 }}|{{ subf 0.3 0.1 }}|{{ divf -1 3 }}"#,
        Ok(r#"3.3333333333333335|0.1428571428571429|1.23456789e+11|1e+20|0.2|-0.3333333333333333"#),
    ),
    (
        r#"{{ until 0 }}|{{ until 3 }}|{{ untilStep 5 0 1 }}|{{ seq 1 1 }}|{{ seq 3 -1 1 }}|{{ seq 1 2 3 4 }}"#,
        Ok(r#"[]|[0 1 2]|[]|1|3 2 1|"#),
    ),
    (
        r#"{{ int "0b101" }}|{{ int "0o17" }}|{{ int "-0x10" }}|{{ int64 "1.0" }}|{{ int " 1" }}|{{ float64 "0x1p-2" }}|{{ float64 "1_000" }}|{{ float64 "inf" }}|{{ float64 true }}"#,
        Ok(r#"5|15|-16|1|0|0.25|1000|+Inf|1"#),
    ),
    (
        r#"{{ toDecimal "-17" }}|{{ toDecimal "8" }}|{{ toDecimal 0.5 }}|{{ toDecimal true }}|{{ toDecimal nil }}|{{ atoi "+5" }}|{{ atoi "-0" }}"#,
        Ok(r#"-15|0|0|0|0|5|0"#),
    ),
    (
        r#"{{ regexFindAll "[0-9]" "a1b2c3" 2 }}|{{ regexFindAll "x" "abc" -1 }}|{{ regexFindAll "a" "aaa" 0 }}|{{ mustRegexFindAll "\\d+" "1 22 333" -1 }}"#,
        Ok(r#"[1 2]|[]|[]|[1 22 333]"#),
    ),
    (
        r#"{{ regexReplaceAllLiteral "a(b)" "xab" "$1" }}|{{ regexReplaceAll "(?P<w>b)" "abc" "[$w]" }}|{{ regexReplaceAll "\\s+" "a  b\u00a0c" "_" }}|{{ regexMatch "(?i)ABC" "xabcx" }}"#,
        Ok(r#"x$1|a[b]c|a_b c|true"#),
    ),
    (
        r#"{{ regexSplit "," "a,b,c" 2 }}|{{ regexSplit "," "" -1 }}|{{ regexSplit "x*" "axbc" -1 }}|{{ mustRegexSplit "," "a,b" 0 }}"#,
        Ok(r#"[a b,c]|[]|[a b c]|[]"#),
    ),
    (
        r#"{{ regexMatch "\\bfoo\\b" "a foo b" }}|{{ regexMatch "^\\w+$" "héllo" }}|{{ regexFind "a{2}" "aaa" }}|{{ regexFind "a{,2}" "a{,2}" }}|{{ regexMatch "[[:alpha:]]+" "abc" }}"#,
        Ok(r#"true|false|aa|a{,2}|true"#),
    ),
    (
        r#"{{ mustRegexFind "a**" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFind "a**" "x">: error calling mustRegexFind: error parsing regexp: invalid nested repetition operator: `**`"#,
        ),
    ),
    (
        r#"{{ mustRegexFind "(?=a)" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFind "(?=a)" "x">: error calling mustRegexFind: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"#,
        ),
    ),
    (
        r#"{{ mustRegexFind "a{1001}" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFind "a{1001}" "x">: error calling mustRegexFind: error parsing regexp: invalid repeat count: `{1001}`"#,
        ),
    ),
    (
        r#"{{ mustRegexFind "\\8" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFind "\\8" "x">: error calling mustRegexFind: error parsing regexp: invalid escape sequence: `\8`"#,
        ),
    ),
    (
        r#"{{ mustRegexFind "x{2,1}" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFind "x{2,1}" "x">: error calling mustRegexFind: error parsing regexp: invalid repeat count: `{2,1}`"#,
        ),
    ),
    (
        r#"{{ mustRegexFind "\\p{Foo}" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFind "\\p{Foo}" "x">: error calling mustRegexFind: error parsing regexp: invalid character class range: `\p{Foo}`"#,
        ),
    ),
    (
        r#"{{ mustRegexFind "(?z)" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFind "(?z)" "x">: error calling mustRegexFind: error parsing regexp: invalid or unsupported Perl syntax: `(?z`"#,
        ),
    ),
    (
        r#"{{ mustRegexFind "a\\" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFind "a\\" "x">: error calling mustRegexFind: error parsing regexp: trailing backslash at end of expression: ``"#,
        ),
    ),
    (
        r#"{{ mustRegexFind "[a" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFind "[a" "x">: error calling mustRegexFind: error parsing regexp: missing closing ]: `[a`"#,
        ),
    ),
    (r#"{{ mustRegexFind "(?P<n>a)(?P<n>b)" "x" }}"#, Ok(r#""#)),
    (
        r#"{{ b64dec "aGVsbG8" }}|{{ b64dec "aGVsbG8=\n" }}|{{ b64dec "a===" }}|{{ b32dec "nbswy3dp" }}|{{ b32enc "" }}"#,
        Ok(
            r#"illegal base64 data at input byte 4|hello|illegal base64 data at input byte 1|illegal base32 data at input byte 0|"#,
        ),
    ),
    (
        r#"{{ sha256sum "" }}|{{ adler32sum "" }}|{{ sha1sum (toString 1) }}"#,
        Ok(
            r#"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855|1|356a192b7913b04c54574d18c28d46e6395428ab"#,
        ),
    ),
    (
        r#"{{ semver "1.2.3-beta+b1" | toString }}|{{ (semver "v1.2.3").Original }}|{{ (semver "1.2.3").GreaterThan (semver "1.2.3-rc1") }}|{{ (semver "1.2.3-alpha").Compare (semver "1.2.3-alpha.1") }}|{{ (semver "v1.2.3-x").IncPatch }}|{{ ((semver "v1.2.3-x").IncMajor).Original }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:238: executing "conf/templates/probe.txt" at <"v1.2.3-x">: can't evaluate field Original in type semver.Version"#,
        ),
    ),
    (
        r#"{{ semverCompare "~1" "1.9.0" }}|{{ semverCompare "~0" "0.5.0" }}|{{ semverCompare ">= 1.2, < 1.4" "1.3.9" }}|{{ semverCompare "1.2.x" "1.2.0-rc1" }}|{{ semverCompare ">1.2.x" "1.3.0" }}|{{ semverCompare "<=1.2.x" "1.2.9" }}|{{ semverCompare "!=1.x" "2.0.0" }}"#,
        Ok(r#"true|true|true|false|true|true|true"#),
    ),
    (
        r#"{{ semverCompare "" "1.0.0" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <semverCompare "" "1.0.0">: error calling semverCompare: improper constraint: "#,
        ),
    ),
    (
        r#"{{ semverCompare ">=1.0 ||" "1.0.0" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <semverCompare ">=1.0 ||" "1.0.0">: error calling semverCompare: improper constraint: "#,
        ),
    ),
    (
        r#"{{ semverCompare "1.0.0" "1.0.0.0" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <semverCompare "1.0.0" "1.0.0.0">: error calling semverCompare: Invalid Semantic Version"#,
        ),
    ),
    (
        r#"{{ semver "1.0.0-01" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <semver "1.0.0-01">: error calling semver: Version segment starts with 0"#,
        ),
    ),
    (
        r#"{{ semver "99999999999999999999.0.0" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <semver "99999999999999999999.0.0">: error calling semver: Error parsing version segment: strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
        ),
    ),
    (
        r#"{{ semverCompare ">1.0.0-alpha" "1.0.0-beta" }}|{{ semverCompare "^1.0.0-0" "1.5.0-rc.1" }}|{{ semverCompare "=1.0" "1.0.5" }}|{{ semverCompare "1.0 - 2.0" "2.0.5" }}"#,
        Ok(r#"true|true|true|true"#),
    ),
    (
        r#"{{ base "a/b" }}|{{ dir "a/b/" }}|{{ clean "/a/../../b/./c//" }}|{{ ext "a.b/" }}|{{ isAbs "a" }}|{{ osClean "" }}|{{ osDir "" }}|{{ osExt ".bashrc" }}"#,
        Ok(r#"b|a/b|/b/c||false|.|.|.bashrc"#),
    ),
    (
        r#"{{ urlParse "HTTP://Example.COM:80/a%20b?x=%20#f%20g" }}|{{ urlParse "//host/p" }}|{{ urlParse "a:b" }}|{{ urlParse "" }}"#,
        Ok(
            r#"map[fragment:f g host:Example.COM:80 hostname:Example.COM opaque: path:/a b query:x=%20 scheme:http userinfo:]|map[fragment: host:host hostname:host opaque: path:/p query: scheme: userinfo:]|map[fragment: host: hostname: opaque:b path: query: scheme:a userinfo:]|map[fragment: host: hostname: opaque: path: query: scheme: userinfo:]"#,
        ),
    ),
    (
        r#"{{ urlParse "http://a b.com/" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlParse "http://a b.com/">: error calling urlParse: unable to parse url: parse "http://a b.com/": invalid character " " in host name"#,
        ),
    ),
    (
        r#"{{ urlParse "http://a.com:x/" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlParse "http://a.com:x/">: error calling urlParse: unable to parse url: parse "http://a.com:x/": invalid port ":x" after host"#,
        ),
    ),
    (
        r#"{{ urlParse "1http://x" }}|{{ urlParse "?a=b" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlParse "1http://x">: error calling urlParse: unable to parse url: parse "1http://x": first path segment in URL cannot contain colon"#,
        ),
    ),
    (
        r#"{{ urlParse ":x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlParse ":x">: error calling urlParse: unable to parse url: parse ":x": missing protocol scheme"#,
        ),
    ),
    (
        r#"{{ urlParse "a:b/c:d" }}|{{ urlParse "http://u%40x:p%3Aw@h/" }}|{{ urlParse "http://[::1]:8080/" }}"#,
        Ok(
            r#"map[fragment: host: hostname: opaque:b/c:d path: query: scheme:a userinfo:]|map[fragment: host:h hostname:h opaque: path:/ query: scheme:http userinfo:u%40x:p%3Aw]|map[fragment: host:[::1]:8080 hostname:::1 opaque: path:/ query: scheme:http userinfo:]"#,
        ),
    ),
    (
        r#"{{ urlJoin (dict "host" "h" "path" "p") }}|{{ urlJoin (dict "path" "a:b") }}|{{ urlJoin (dict "scheme" "mailto" "opaque" "x@y") }}|{{ urlJoin (dict "scheme" "http" "host" "h" "userinfo" "u:p@x") }}|{{ urlJoin (dict) }}|{{ urlJoin (dict "fragment" "a b#c" "query" "q r") }}"#,
        Ok(r#"//h/p|./a:b|mailto:x@y|http://u:p%40x@h||?q r#a%20b%23c"#),
    ),
    (
        r#"{{ urlJoin (dict "host" 1) }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlJoin (dict "host" 1)>: error calling urlJoin: unable to parse host key, must be of type string, but int found"#,
        ),
    ),
    (
        r#"{{ urlJoin (dict "host" nil) }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlJoin (dict "host" nil)>: error calling urlJoin: runtime error: invalid memory address or nil pointer dereference"#,
        ),
    ),
    (
        r#"{{ coalesce }}|{{ all }}|{{ any }}|{{ empty 0.0 }}|{{ empty (list nil) }}|{{ empty " " }}|{{ default 1 }}|{{ default "x" nil "y" }}|{{ ternary 1 2 false }}|{{ hello }}"#,
        Ok(r#"|true|false|true|false|false|1|x|2|Hello!"#),
    ),
    (
        r#"{{ toString (dict "a" (list 1 "b" nil)) }}|{{ quote 1e6 2 }}|{{ cat nil }}|{{ cat 1e21 0.000001 }}"#,
        Ok(r#"map[a:[1 b <nil>]]|"1e+06" "2"||1e+21 1e-06"#),
    ),
    (
        r#"{{ camelcase "ABC_DEF ghi" }}|{{ camelcase "a--b" }}|{{ camelcase "x" }}|{{ kebabcase "AbcDEFGhi" }}|{{ snakecase "already_snake" }}|{{ snakecase "  leading" }}|{{ kebabcase "Hello, World!" }}|{{ snakecase "v1.2.3" }}|{{ snakecase "ÉcoleNormale" }}"#,
        Ok(
            r#"AbcDefGhi|A-B|X|abc-def-ghi|already_snake|__leading|hello,-world!|v1.2.3|école_normale"#,
        ),
    ),
    (
        r#"{{ contains "a" nil }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:16: executing "conf/templates/probe.txt" at <nil>: cannot assign nil to string"#,
        ),
    ),
    (
        r#"{{ title "hello_world 2nd-place" }}|{{ title "" }}|{{ title "ǆemal" }}|{{ title "x.y" }}"#,
        Ok(r#"Hello_world 2nd-Place||ǅemal|X.Y"#),
    ),
    (
        r#"{{ trim "\t x \r\n" }}|{{ trimAll "ab" "" }}|{{ trimAll "" "  x " }}|{{ trimPrefix "" "x" }}|{{ trimSuffix "x" "x" }}"#,
        Ok(r#"x||  x |x|"#),
    ),
    (
        r#"{{ "hello" | trunc 2 | upper | quote }}|{{ "a b" | replace " " "-" }}|{{ "x,y" | splitList "," | join ";" }}"#,
        Ok(r#""HE"|a-b|x;y"#),
    ),
    (
        r#"{{ kebabcase "myHTTPServer2Go" }}|{{ snakecase "SomeXMLData" }}|{{ camelcase "some-xml data" }}|{{ camelcase "SomeWords" }}|{{ snakecase "a1b2" }}|{{ kebabcase "A" }}|{{ snakecase "" }}"#,
        Ok(r#"my-http-server2-go|some_xml_data|SomeXmlData|SomeWords|a_1b2|a|"#),
    ),
    (
        r#"{{ swapcase "ǅa" }}|{{ swapcase "1a b" }}|{{ untitle "" }}|{{ untitle " ABC  DEF" }}|{{ initials "" }}|{{ initials "  a  b " }}"#,
        Ok(r#"ǆA|1A B|| aBC  dEF||ab"#),
    ),
    (
        r#"{{ abbrev 4 "abcd" }}|{{ abbrev 4 "abcde" }}|{{ abbrevboth 10 7 "abcdefghijklmno" }}|{{ abbrevboth 3 6 "abcdefghij" }}|{{ abbrevboth -1 5 "abcdefghij" }}|{{ abbrev 10 "" }}"#,
        Ok(r#"abcd|a...|...k...|abcdefghij|ab...|"#),
    ),
    (
        r#"{{ wrap 10 "The quick brown fox jumps over the lazy dog" }}|{{ wrapWith 10 "\n" "Supercalifragilistic is long" }}|{{ wrap 5 "  leading spaces here" }}"#,
        Ok(r#"The quick
brown fox
jumps over
the lazy
dog|Supercalif
ragilistic
is long|leading
spaces
here"#),
    ),
    (
        r#"{{ list (list 1 2) (dict "a" 1) }}|{{ tuple 1 "a" }}|{{ typeOf (tuple) }}|{{ len (list 1 2 3) }}"#,
        Ok(r#"[[1 2] map[a:1]]|[1 a]|[]interface {}|3"#),
    ),
    (
        r#"{{ mustLast (list 1 2) }}|{{ mustRest (list 1) }}|{{ mustInitial (list) }}|{{ mustReverse (splitList "," "a,b") }}|{{ typeOf (mustReverse (splitList "," "a,b")) }}|{{ mustUniq (list 1 1) }}|{{ mustWithout (list 1 2) 1 }}|{{ mustHas 1 (list 1) }}|{{ mustCompact (list 0 1) }}|{{ mustChunk 1 (list 1 2) }}|{{ mustPrepend (list 1) 0 }}|{{ mustPush (list 1) 2 }}|{{ mustAppend (list) 1 }}"#,
        Ok(r#"2|[]|[]|[b a]|[]interface {}|[1]|[2]|true|[1]|[[1] [2]]|[0 1]|[1 2]|[1]"#),
    ),
    (
        r#"{{ mustLast 1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustLast 1>: error calling mustLast: Cannot find last on type int"#,
        ),
    ),
    (
        r#"{{ mustSlice "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustSlice "x">: error calling mustSlice: list should be type of slice or array but string"#,
        ),
    ),
    (
        r#"{{ slice (list 1 2 3) -1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <slice (list 1 2 3) -1>: error calling slice: reflect.Value.Slice: slice index out of bounds"#,
        ),
    ),
    (
        r#"{{ slice (list 1 2 3) 1 5 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <slice (list 1 2 3) 1 5>: error calling slice: reflect.Value.Slice: slice index out of bounds"#,
        ),
    ),
    (
        r#"{{ until -3 }}|{{ untilStep 0 -6 -2 }}|{{ untilStep 3 3 1 }}|{{ seq -1 1 }}|{{ seq 10 -5 1 }}|{{ seq 1 -1 3 }}"#,
        Ok(r#"[0 -1 -2]|[0 -2 -4]|[]|-1 0 1|10 5|"#),
    ),
    (
        r#"{{ seq "3" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:7: executing "conf/templates/probe.txt" at <"3">: expected integer; found "3""#,
        ),
    ),
    (
        r#"{{ pick (dict "a" 1) }}|{{ omit (dict "a" 1) }}|{{ keys }}|{{ keys (dict) }}|{{ values (dict "a" nil) }}"#,
        Ok(r#"map[]|map[a:1]|[]|[]|[<nil>]"#),
    ),
    (
        r#"{{ pick (dict "a" 1) 1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:21: executing "conf/templates/probe.txt" at <1>: expected string; found 1"#,
        ),
    ),
    (
        r#"{{ get (dict "a" nil) "a" }}|{{ typeOf (get (dict) "x") }}|{{ hasKey (dict "a" 1) "A" }}"#,
        Ok(r#"|string|false"#),
    ),
    (
        r#"{{ $a := dict "x" (dict "y" 1) }}{{ $b := merge (dict) $a }}{{ $_ := set $b.x "y" 2 }}{{ $a }}"#,
        Ok(r#"map[x:map[y:2]]"#),
    ),
    (
        r#"{{ merge (dict "a" "x") (dict "a" (dict "b" 1)) }}|{{ merge (dict "a" (dict "b" 1)) (dict "a" "x") }}|{{ mergeOverwrite (dict "a" (dict "b" 1)) (dict "a" "x") }}|{{ mergeOverwrite (dict "a" (list 1)) (dict "a" (dict)) }}"#,
        Ok(r#"map[a:x]|map[a:map[b:1]]|map[a:x]|map[a:map[]]"#),
    ),
    (
        r#"{{ add }}|{{ mul 3 }}|{{ max 3 }}|{{ min -1 -5 "x" }}|{{ biggest 1 }}|{{ typeOf (max 1) }}|{{ typeOf (maxf 1) }}"#,
        Ok(r#"0|3|3|-5|1|int64|float64"#),
    ),
    (
        r#"{{ mod 7 -3 }}|{{ mod -9223372036854775808 -1 }}|{{ div -9223372036854775808 -1 }}|{{ sub -9223372036854775808 1 }}"#,
        Ok(r#"1|0|-9223372036854775808|9223372036854775807"#),
    ),
    (
        r#"{{ floor 1e300 }}|{{ ceil -0.5 }}|{{ round -0.5 0 }}|{{ maxf 0 -0.0 }}|{{ minf -0.0 0 }}"#,
        Ok(r#"1e+300|-0|-1|0|-0"#),
    ),
    (
        r#"{{ addf "1.1" "x" }}|{{ subf 1 }}|{{ mulf 2 }}|{{ divf 6 }}|{{ mulf 1.5 (list 1) }}|{{ addf 0.1 0.2 0.3 }}|{{ subf 0.3 0.2 0.1 }}"#,
        Ok(r#"1.1|1|2|6|0|0.6|0"#),
    ),
    (
        r#"{{ divf 0 5 }}|{{ divf 5 -0.0 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:18: executing "conf/templates/probe.txt" at <divf 5 -0.0>: error calling divf: decimal division by 0"#,
        ),
    ),
    (
        r#"{{ float64 "nan" }}|{{ float64 "-Infinity" }}|{{ float64 "+nan" }}|{{ float64 "1e" }}|{{ float64 "e5" }}|{{ int "+0b1" }}|{{ int "1_0" }}|{{ int "_10" }}|{{ int "0_10" }}|{{ int "0x_1F" }}"#,
        Ok(r#"NaN|-Inf|0|0|0|1|10|0|8|31"#),
    ),
    (
        r#"{{ regexFind "(?m)^b" "a\nb" }}|{{ regexFind "(?s)a.b" "a\nb" }}|{{ regexFind "a.b" "a\nb" }}|{{ regexFindAll "(?U)a+" "aaa" -1 }}|{{ regexReplaceAll "a|" "bab" "x" }}"#,
        Ok(r#"b|a
b||[a a a]|xbxbx"#),
    ),
    (
        r#"{{ regexReplaceAll "(\\w+)@(\\w+)" "me@host you@there" "$2:$1" }}|{{ regexReplaceAll "o" "foo" "$$" }}|{{ regexReplaceAll "(o)" "foo" "${1" }}|{{ regexReplaceAll "(o)" "foo" "$9" }}"#,
        Ok(r#"host:me there:you|f$$|f${1${1|f"#),
    ),
    (
        r#"{{ regexMatch "\\Qa.b\\E" "a.b" }}|{{ regexMatch "\\Qa.b\\E" "axb" }}|{{ regexMatch "[\\d-]+" "1-2" }}|{{ regexMatch "[^\\s]" " " }}|{{ regexMatch "\\x41" "A" }}|{{ regexMatch "\\pL" "é" }}|{{ regexMatch "[[:^digit:]]" "1" }}"#,
        Ok(r#"true|false|true|false|true|true|false"#),
    ),
    (
        r#"{{ regexMatch "\\z" "" }}|{{ regexMatch "\\A" "" }}|{{ regexFindAll "\\b" "ab cd" -1 | len }}|{{ regexSplit "\\s*,\\s*" "a , b,c" -1 }}|{{ regexSplit "a" "a" -1 }}|{{ regexSplit "a" "bab" 5 }}"#,
        Ok(r#"true|true|4|[a b c]|[ ]|[b b]"#),
    ),
    (
        r#"{{ mustRegexReplaceAll "[" "x" "y" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexReplaceAll "[" "x" "y">: error calling mustRegexReplaceAll: error parsing regexp: missing closing ]: `[`"#,
        ),
    ),
    (
        r#"{{ regexSplit ")" "x" -1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <regexSplit ")" "x" -1>: error calling regexSplit: regexp: Compile(`)`): error parsing regexp: unexpected ): `)`"#,
        ),
    ),
    (
        r#"{{ regexFindAll "*" "x" -1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <regexFindAll "*" "x" -1>: error calling regexFindAll: regexp: Compile(`*`): error parsing regexp: missing argument to repetition operator: `*`"#,
        ),
    ),
    (
        r#"{{ mustRegexFindAll "(?<n" "x" -1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexFindAll "(?<n" "x" -1>: error calling mustRegexFindAll: error parsing regexp: invalid named capture: `(?<n`"#,
        ),
    ),
    (
        r#"{{ mustRegexMatch "x{2}{3}" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexMatch "x{2}{3}" "x">: error calling mustRegexMatch: error parsing regexp: invalid nested repetition operator: `{2}{3}`"#,
        ),
    ),
    (
        r#"{{ mustRegexMatch "[a-\\d]" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexMatch "[a-\\d]" "x">: error calling mustRegexMatch: error parsing regexp: invalid escape sequence: `\d`"#,
        ),
    ),
    (
        r#"{{ mustRegexMatch "\\C" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexMatch "\\C" "x">: error calling mustRegexMatch: error parsing regexp: invalid escape sequence: `\C`"#,
        ),
    ),
    (
        r#"{{ mustRegexMatch "(?i" "x" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustRegexMatch "(?i" "x">: error calling mustRegexMatch: error parsing regexp: invalid or unsupported Perl syntax: `(?i`"#,
        ),
    ),
    (
        r#"{{ b32dec "ME" }}|{{ b32dec "ME======ME======" }}|{{ b32dec "MFRGG===" }}|{{ b32dec "MFRGGZA=" }}|{{ b32dec "MFRGGZDF" }}|{{ b32dec "M=======" }}|{{ b32enc "abcdef" }}"#,
        Ok(
            r#"illegal base32 data at input byte 0|illegal base32 data at input byte 2|abc|abcd|abcde|illegal base32 data at input byte 1|MFRGGZDFMY======"#,
        ),
    ),
    (
        r#"{{ sha1sum "" }}|{{ sha512sum "" | trunc 16 }}|{{ adler32sum "Wikipedia" }}|{{ sha256sum (b64dec "/w==") }}"#,
        Ok(
            r#"da39a3ee5e6b4b0d3255bfef95601890afd80709|cf83e1357eefb8bd|300286872|a8100ae6aa1940d0b663bb31cd466142ebbdbd5187131b92d93818987832eb89"#,
        ),
    ),
    (
        r#"{{ semverCompare ">=1.2.3-alpha.1" "1.2.3-alpha.beta" }}|{{ semverCompare "<1.2.3-beta" "1.2.3-alpha.10" }}|{{ semverCompare "~1.2.3-beta.2" "1.2.4-beta.1" }}|{{ semverCompare "^1.2.3-beta.2" "1.2.3-beta.10" }}|{{ semverCompare "v1.2" "1.2.7" }}|{{ semverCompare ">=v1.2" "1.3" }}|{{ semverCompare "~> 1.2" "1.5" }}|{{ semverCompare "=>1.0,=<2.0" "1.5" }}"#,
        Ok(r#"true|true|true|true|true|true|false|true"#),
    ),
    (
        r#"{{ semverCompare "1.2.3 || 2.x" "2.1.0" }}|{{ semverCompare " >= 1.0 " "1.0.0" }}|{{ semverCompare "1.x.x" "1.2.3" }}|{{ semverCompare "1.*" "1.2.3" }}|{{ semverCompare "x" "0.0.1-alpha" }}|{{ semverCompare ">1.2.3+build" "1.2.3" }}|{{ semverCompare "<=1.2" "1.2.99" }}|{{ semverCompare "<1.x" "1.9.0" }}"#,
        Ok(r#"true|true|true|true|false|false|true|false"#),
    ),
    (
        r#"{{ semverCompare "^0.0.3" "0.0.4" }}|{{ semverCompare "^0.x" "0.9.0" }}|{{ semverCompare "^0.0.x" "0.0.9" }}|{{ semverCompare "^0.0.x" "0.1.0" }}|{{ semverCompare "!=1.2.3" "1.2.3-alpha" }}|{{ semverCompare "!=1.2.x-0" "1.2.3-alpha" }}|{{ semverCompare "~1.2.x" "1.3.0" }}|{{ semverCompare "1.2.3 - 1.2" "1.2.3" }}"#,
        Ok(r#"false|true|true|false|true|true|false|true"#),
    ),
    (
        r#"{{ semverCompare ">=1.0 <=2.0, !=1.5.0" "1.5.0" }}|{{ semverCompare ">=1.0,,<2" "1.5.0" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:54: executing "conf/templates/probe.txt" at <semverCompare ">=1.0,,<2" "1.5.0">: error calling semverCompare: improper constraint: >=1.0,,<2"#,
        ),
    ),
    (
        r#"{{ semverCompare ">=1.0 ,<2" "1.5.0" }}|{{ semverCompare "> 1.0" "1.5.0" }}|{{ semverCompare ">=1.0.0.0" "1.0.0" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:79: executing "conf/templates/probe.txt" at <semverCompare ">=1.0.0.0" "1.0.0">: error calling semverCompare: improper constraint: >=1.0.0.0"#,
        ),
    ),
    (
        r#"{{ semverCompare "1.0.0-01" "1.0.0" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <semverCompare "1.0.0-01" "1.0.0">: error calling semverCompare: constraint Parser Error"#,
        ),
    ),
    (
        r#"{{ semver "" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <semver "">: error calling semver: Invalid Semantic Version"#,
        ),
    ),
    (
        r#"{{ semver "1.2.3-+" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <semver "1.2.3-+">: error calling semver: Invalid Semantic Version"#,
        ),
    ),
    (
        r#"{{ semver "1.2.3+a..b" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <semver "1.2.3+a..b">: error calling semver: Invalid Semantic Version"#,
        ),
    ),
    (
        r#"{{ (semver "1.2.3").SetPrerelease "01" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:19: executing "conf/templates/probe.txt" at <(semver "1.2.3").SetPrerelease>: error calling SetPrerelease: Version segment starts with 0"#,
        ),
    ),
    (
        r#"{{ base "." }}|{{ base "/" }}|{{ dir "/a" }}|{{ dir "" }}|{{ dir "a/b/../c" }}|{{ ext "." }}|{{ ext "a/.b.c" }}|{{ clean "a/b/../../.." }}|{{ clean "//a" }}|{{ isAbs "" }}|{{ osBase "a\\b" }}|{{ clean "./" }}"#,
        Ok(r#".|/|/|.|a|.|.c|..|/a|false|a\b|."#),
    ),
    (
        r#"{{ urlParse "https://example.com" }}|{{ urlParse "https://example.com?" }}|{{ urlParse "file:///etc/hosts" }}|{{ urlParse "x://h?a#" }}"#,
        Ok(
            r#"map[fragment: host:example.com hostname:example.com opaque: path: query: scheme:https userinfo:]|map[fragment: host:example.com hostname:example.com opaque: path: query: scheme:https userinfo:]|map[fragment: host: hostname: opaque: path:/etc/hosts query: scheme:file userinfo:]|map[fragment: host:h hostname:h opaque: path: query:a scheme:x userinfo:]"#,
        ),
    ),
    (
        r#"{{ urlParse "http://h/%zz" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlParse "http://h/%zz">: error calling urlParse: unable to parse url: parse "http://h/%zz": invalid URL escape "%zz""#,
        ),
    ),
    (
        r#"{{ urlParse "http://h/a#%zz" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlParse "http://h/a#%zz">: error calling urlParse: unable to parse url: parse "http://h/a#%zz": invalid URL escape "%zz""#,
        ),
    ),
    (
        r#"{{ urlParse "http://h%41/" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlParse "http://h%41/">: error calling urlParse: unable to parse url: parse "http://h%41/": invalid URL escape "%41""#,
        ),
    ),
    (
        r#"{{ urlParse "http://u@s@h/" }}|{{ urlParse "http://u:@h/" }}|{{ urlParse "http://:p@h/" }}|{{ urlParse "http://h:/" }}|{{ urlParse "HTTPS://H" }}"#,
        Ok(
            r#"map[fragment: host:h hostname:h opaque: path:/ query: scheme:http userinfo:u%40s]|map[fragment: host:h hostname:h opaque: path:/ query: scheme:http userinfo:u:]|map[fragment: host:h hostname:h opaque: path:/ query: scheme:http userinfo::p]|map[fragment: host:h: hostname:h opaque: path:/ query: scheme:http userinfo:]|map[fragment: host:H hostname:H opaque: path: query: scheme:https userinfo:]"#,
        ),
    ),
    (
        r#"{{ urlParse "http://a\u0001b" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlParse "http://a\u0001b">: error calling urlParse: unable to parse url: parse "http://a\x01b": net/url: invalid control character in URL"#,
        ),
    ),
    (
        r#"{{ urlParse "http://[fe80::1%25en0]:8080/" }}|{{ urlParse "http://[::1]x/" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:49: executing "conf/templates/probe.txt" at <urlParse "http://[::1]x/">: error calling urlParse: unable to parse url: parse "http://[::1]x/": invalid port "x" after host"#,
        ),
    ),
    (
        r#"{{ urlJoin (dict "scheme" "https" "host" "ex.com" "path" "/a?b#c d") }}|{{ urlJoin (dict "scheme" "http" "path" "/x") }}|{{ urlJoin (dict "scheme" "http") }}|{{ urlJoin (dict "host" "h é") }}|{{ urlJoin (dict "userinfo" "u") }}|{{ urlJoin (dict "path" "" "query" "" "host" "h") }}"#,
        Ok(r#"https://ex.com/a%3Fb%23c%20d|http:///x|http:|//h%20%C3%A9|//u@|//h"#),
    ),
    (
        r#"{{ urlJoin (dict "userinfo" "%zz") }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <urlJoin (dict "userinfo" "%zz")>: error calling urlJoin: unable to parse userinfo in dict: parse "proto://%zz@host": invalid URL escape "%zz""#,
        ),
    ),
    (
        r#"{{ ternary "y" "n" nil }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:19: executing "conf/templates/probe.txt" at <nil>: cannot assign nil to bool"#,
        ),
    ),
    (
        r#"{{ mustDeepCopy nil }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <mustDeepCopy nil>: error calling mustDeepCopy: reflect: call of reflect.Value.Type on zero Value"#,
        ),
    ),
    (
        r#"{{ deepCopy (list 1 (dict "a" 2)) }}|{{ deepCopy "s" }}|{{ deepCopy 1.5 }}|{{ typeOf (deepCopy (splitList "," "a")) }}|{{ typeOf (deepCopy (semver "1.0.0")) }}"#,
        Ok(r#"[1 map[a:2]]|s|1.5|[]string|*semver.Version"#),
    ),
    (
        r#"{{ $x := list }}{{ range until 3 }}{{ $x = append $x . }}{{ end }}{{ $x }}|{{ $m := dict }}{{ range $i, $e := list "a" "b" }}{{ $_ := set $m $e $i }}{{ end }}{{ $m }}"#,
        Ok(r#"[0 1 2]|map[a:0 b:1]"#),
    ),
    (
        r#"{{ tuple 1 2 | len }}|{{ index (list 1 2 3) 1 }}|{{ (list 1 2 3) | last }}|{{ (splitList "/" "a/b/c") | rest | join "/" }}"#,
        Ok(r#"2|2|3|b/c"#),
    ),
    (
        r#"{{ dict "a" 1 | toString }}|{{ dict "a" 1 | keys | first }}|{{ list 3 1 2 | sortAlpha | reverse }}|{{ list "a" "b" | has "a" }}"#,
        Ok(r#"map[a:1]|a|[3 2 1]|true"#),
    ),
    (
        r#"{{ $parts := split ":" "img:tag" }}{{ $parts._0 }}/{{ $parts._1 }}|{{ (splitn "=" 2 "k=v=w")._1 }}|{{ regexSplit "=" "k=v=w" 2 | last }}"#,
        Ok(r#"img/tag|v=w|v=w"#),
    ),
    (
        r#"{{ indent 2 (printf "a\nb") }}|{{ nindent 4 "x" | trim }}|{{ "line1\nline2" | indent 2 | quote }}"#,
        Ok(r#"  a
  b|x|"  line1\n  line2""#),
    ),
    (
        r#"{{ $a := list 1 2 }}{{ $b := append $a 3 }}{{ $a }}|{{ $b }}|{{ $c := prepend $b 0 }}{{ $c | len }}"#,
        Ok(r#"[1 2]|[1 2 3]|4"#),
    ),
    (
        r#"{{ range $i, $c := chunk 2 (list "a" "b" "c") }}[{{ $i }}:{{ join "," $c }}]{{ end }}"#,
        Ok(r#"[0:a,b][1:c]"#),
    ),
    (
        r#"{{ range splitList "," "a,b" }}{{ . | upper }}{{ end }}|{{ range $k, $v := split "," "x,y" }}{{ $k }}={{ $v }};{{ end }}"#,
        Ok(r#"AB|_0=x;_1=y;"#),
    ),
    (
        r#"{{ quote "\u2028" "\ufeff" "\U0001F600" "\u00e9" "\t" "\x7f" }}"#,
        Ok(r#""\u2028" "\ufeff" "😀" "é" "\t" "\x7f""#),
    ),
    (
        r#"{{ upper "ǆ" }}|{{ lower "ǅ" }}|{{ title "ǆ" }}|{{ upper "ﬁ" }}|{{ lower "İ" }}|{{ upper "ı" }}|{{ lower "Σ" }}|{{ upper "ᾳ" }}|{{ title "ᾳ" }}"#,
        Ok(r#"Ǆ|ǆ|ǅ|ﬁ|i|I|σ|ᾼ|ᾼ"#),
    ),
    (
        r#"{{ swapcase "ß" }}|{{ swapcase "ǆ ǅ" }}|{{ title "élan-vital" }}|{{ camelcase "élan_vital" }}|{{ kebabcase "ÉlanVital" }}"#,
        Ok(r#"ß|ǅ ǆ|Élan-Vital|ÉlanVital|élan-vital"#),
    ),
    (
        r#"{{ mustRegexReplaceAllLiteral "b+" "abbc" "$0" }}|{{ mustRegexSplit "b" "abc" -1 }}|{{ regexReplaceAll "" "abc" "-" }}|{{ regexFindAll "" "ab" -1 }}|{{ regexSplit "(b)" "abc" -1 }}"#,
        Ok(r#"a$0c|[a c]|-a-b-c-|[  ]|[a c]"#),
    ),
    (
        r#"{{ osBase "" }}|{{ osDir "a/" }}|{{ osIsAbs "\\x" }}|{{ base "a//" }}|{{ ext "a." }}"#,
        Ok(r#".|a|false|a|."#),
    ),
    (
        r#"{{ splitn "," -1 "a,b,c" }}|{{ splitn "," 1 "a,b" }}|{{ splitList "ab" "xabyabz" }}|{{ split "x" "" }}|{{ splitn "" 2 "abc" }}"#,
        Ok(r#"map[_0:a _1:b _2:c]|map[_0:a,b]|[x y z]|map[_0:]|map[_0:a _1:bc]"#),
    ),
    (
        r#"{{ substr -1 9 "abc" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <substr -1 9 "abc">: error calling substr: runtime error: slice bounds out of range [:9] with length 3"#,
        ),
    ),
    (
        r#"{{ wrap 3 "ab\ncd ef" }}|{{ wrapWith 2 "" "abcd" }}|{{ wrap 3 "a    b" }}"#,
        Ok(r#"ab
cd
ef|ab
cd|a  
 b"#),
    ),
    (
        r#"{{ camelcase "hello  world" }}|{{ camelcase "-a-" }}|{{ camelcase "ab_" }}|{{ camelcase "a_1b" }}|{{ snakecase "Hello World!" }}|{{ kebabcase "fooBar_baz-QUX" }}|{{ snakecase "IPv6Address" }}|{{ kebabcase "a...b" }}"#,
        Ok(r#"Hello World|-A-|Ab_|A1b|hello_world!|foo-bar-baz-qux|i_pv6_address|a...b"#),
    ),
    (
        r#"{{ title "o'neil mc-donald x_y 1a" }}|{{ title "ÿes" }}|{{ swapcase "Ǆx" }}|{{ lower "ΑΣ" }}|{{ upper "ǰ" }}"#,
        Ok(r#"O'Neil Mc-Donald X_y 1a|Ÿes|ǆX|ασ|ǰ"#),
    ),
    (
        r#"{{ cat }}|{{ cat "" "" }}|{{ cat 1 nil 2 }}|{{ quote "" }}|{{ squote "" }}|{{ quote nil nil }}"#,
        Ok(r#"| |1 2|""|''|"#),
    ),
    (
        r#"{{ trimAll "é" "éxé" }}|{{ trimAll "ab" "bba" }}|{{ trim "\u0085x\u00a0" }}|{{ replace "aa" "b" "aaa" }}|{{ contains "" "" }}|{{ hasSuffix "" "x" }}"#,
        Ok(r#"x||x|ba|true|true"#),
    ),
    (
        r#"{{ chunk 1 (list) }}|{{ chunk 3 (list 1 2 3) }}|{{ chunk 2 (splitList "," "a,b,c") }}|{{ reverse (list 1) }}|{{ initial (list 1) }}"#,
        Ok(r#"[]|[[1 2 3]]|[[a b] [c]]|[1]|[]"#),
    ),
    (
        r#"{{ dict "a" 1 "a" 2 }}|{{ dict (list 1) 2 }}|{{ dict "" 1 }}|{{ get (dict "" 5) "" }}|{{ omit (dict "a" 1 "b" 2) "a" "b" }}"#,
        Ok(r#"map[a:2]|map[[1]:2]|map[:1]|5|map[]"#),
    ),
    (
        r#"{{ max 1 "x" -2 }}|{{ min "0x10" 20 }}|{{ maxf "nan" 1 }}|{{ minf 1 "-inf" }}|{{ add 1 true }}|{{ mul 2 nil }}|{{ sub 1.9 0.9 }}"#,
        Ok(r#"1|16|NaN|-Inf|2|0|1"#),
    ),
    (
        r#"{{ round 2.675 2 }}|{{ round 1e20 2 }}|{{ round -2.5 0 }}|{{ round 0.5 0 }}|{{ round 1.45 1 }}|{{ floor -0.0 }}|{{ ceil 0.1 | typeOf }}"#,
        Ok(r#"2.68|1e+20|-3|1|1.5|-0|float64"#),
    ),
    (
        r#"{{ add1f "x" }}|{{ divf 1 3 3 }}|{{ subf -1 -1 }}|{{ mulf 0.1 3 }}|{{ addf 0.1 0.7 }}|{{ divf 100 3 }}|{{ mulf 123456789.123 1000 }}"#,
        Ok(r#"1|0.1111111111111111|0|0.3|0.8|33.333333333333336|1.23456789123e+11"#),
    ),
    (
        r#"{{ divf 1 "inf" }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <divf 1 "inf">: error calling divf: Cannot create a Decimal from +Inf"#,
        ),
    ),
    (
        r#"{{ (semver "1.2.3").SetPrerelease 1 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:34: executing "conf/templates/probe.txt" at <1>: expected string; found 1"#,
        ),
    ),
    (
        r#"{{ (semver "1.2.3").SetPrerelease nil }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:34: executing "conf/templates/probe.txt" at <nil>: cannot assign nil to string"#,
        ),
    ),
    (
        r#"{{ (semver "1.2.3").LessThan nil }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:19: executing "conf/templates/probe.txt" at <(semver "1.2.3").LessThan>: error calling LessThan: runtime error: invalid memory address or nil pointer dereference"#,
        ),
    ),
    (
        r#"{{ (semver "1.2.3").IncPatch.SetMetadata "x" }}"#,
        Ok(r#"1.2.4+x"#),
    ),
    (
        r#"{{ trunc 2 "héllo" | snakecase | b64enc }}|{{ trunc 2 "HÉLLO" | kebabcase | b64enc }}|{{ printf "%s%s%s" "AB" (substr 2 3 "hé") "CD" | snakecase | b64enc }}|{{ substr 1 4 "AÉÉB" | snakecase | b64enc }}"#,
        Ok(r#"aMM=|aO+/vQ==|YWLvv71jZA==|w6nvv70="#),
    ),
    (
        r#"{{ divf 1e308 1e-308 }}|{{ divf -1e300 3e-100 }}|{{ divf 1e-308 1e308 }}|{{ addf 1e300 1e-300 }}|{{ mulf 1.7976931348623157e308 10 0.1 }}"#,
        Ok(r#"+Inf|-Inf|0|1e+300|1.7976931348623157e+308"#),
    ),
    (
        r#"{{ divf (divf 1e308 1e-308) 1e308 }}"#,
        Err(
            r#"template: conf/templates/probe.txt:1:3: executing "conf/templates/probe.txt" at <divf (divf 1e308 1e-308) 1e308>: error calling divf: Cannot create a Decimal from +Inf"#,
        ),
    ),
    (
        r#"{{ toDecimal "0777" | typeOf }}|{{ toDecimal "-0" }}|{{ toDecimal "77777777777777777777777" }}|{{ toDecimal (list 1) }}|{{ int64 (list 1) }}|{{ float64 (dict) }}|{{ int "+0" }}"#,
        Ok(r#"int64|0|0|0|0|0|0"#),
    ),
    (
        r#"{{ regexQuoteMeta "a-b#c d" }}|{{ regexQuoteMeta "" }}|{{ regexMatch (regexQuoteMeta "a.b*") "a.b*" }}"#,
        Ok(r#"a-b#c d||true"#),
    ),
];

fn render(text: &str) -> Result<String, String> {
    let mut engine = Engine::new(EngineOptions::default());
    engine.add_template(NAME, text).map_err(|e| e.to_string())?;
    engine
        .execute(NAME, &Value::empty_map())
        .map_err(|e| e.to_string())
}

#[test]
fn sprig_core_matches_helm() {
    let mut failures = Vec::new();
    for (template, want) in VECTORS {
        let got = render(template);
        let same = match (&got, want) {
            (Ok(g), Ok(w)) => g == w,
            (Err(g), Err(w)) => g == w,
            _ => false,
        };
        if !same {
            failures.push(format!("{template}\n  got:  {got:?}\n  want: {want:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        VECTORS.len(),
        failures.join("\n")
    );
}
