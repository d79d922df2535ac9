//! Filter expressions: the `filter=` conditions of list routes and the boolean
//! filters of webhooks.
//!
//! Both use one grammar, so a condition means the same thing wherever it is
//! written, and a list filter that works can be pasted into a webhook filter.
//! A list filter is a single [`Condition`] (callers AND repeated `filter`
//! parameters); a webhook filter is an [`Expr`] of conditions joined by `and`,
//! `or`, `not` and brackets.
//!
//! ```text
//! list-filter    = ws , condition , ws ;                     (* Condition::parse *)
//! webhook-filter = ws , or-expr , ws ;                       (* Expr::parse *)
//! or-expr        = and-expr , { ws , "or" , ws , and-expr } ; (* left-associative *)
//! and-expr       = unary , { ws , "and" , ws , unary } ;      (* left-associative *)
//! unary          = "not" , ws , unary | primary ;
//! primary        = "(" , ws , or-expr , ws , ")" | condition ;
//! condition      = attribute , ws , op , ws , value ;
//! attribute      = name , { "." , name } ;                    (* not a keyword *)
//! name           = name-char , { name-char } ;
//! name-char      = letter | digit | "_" | "-" ;               (* Unicode letters and digits *)
//! op             = "=" | "!=" | "^=" | "$=" | "*=" ;
//! value          = bare | quoted ;
//! bare           = bare-char , { bare-char } ;                (* not a keyword *)
//! bare-char      = ? any character but whitespace, "(", ")" and '"' ? ;
//! quoted         = '"' , { ? any character but '"' and "\" ? | "\" , ( '"' | "\" ) } , '"' ;
//! ws             = { ? Unicode whitespace ? } ;
//! ```
//!
//! Keywords (`and`, `or`, `not`) are ASCII case-insensitive and are read as
//! whole words of name characters and dots: `nota=1` and `not.x=1` are
//! conditions on the attributes `nota` and `not.x`, while `not(a=1)` and
//! `(a=1)and(b=2)` need no spaces. A bare value runs up to the next
//! whitespace, bracket or quote, so a keyword after a bare value must be
//! separated by whitespace (`a=1 and b=2`). Precedence is `not` > `and` > `or`.
//!
//! Filters come from API callers, so parsing never panics and bounds the
//! tree it builds ([`MAX_NESTING`], [`MAX_CONDITIONS`]): matching, printing
//! and dropping recurse over the tree, and an unbounded one could overflow
//! the stack of whichever actor evaluates it.

use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// Most brackets and `not`s a filter may nest. Real filters nest two or three
/// levels; the bound keeps the recursive parser and evaluator far from the
/// end of the stack whatever a caller sends.
pub const MAX_NESTING: usize = 64;

/// Most conditions one filter may hold. A chain `a or b or c ...` becomes a
/// tree as deep as it is long, so this bounds the depth of chains the way
/// [`MAX_NESTING`] bounds brackets.
pub const MAX_CONDITIONS: usize = 256;

/// The words that join conditions; a bare value or an attribute that is one of
/// them would be ambiguous.
const KEYWORDS: [&str; 3] = ["and", "or", "not"];

/// How a condition compares the attribute's actual value with its expected one.
/// Comparisons are exact and case-sensitive: filters select identifiers and
/// event names, where case matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `^=`: the actual value starts with the expected one.
    StartsWith,
    /// `$=`: the actual value ends with the expected one.
    EndsWith,
    /// `*=`: the actual value contains the expected one.
    Contains,
}

impl Op {
    /// Whether `actual` satisfies this operator against `expected`.
    pub fn apply(self, actual: &str, expected: &str) -> bool {
        match self {
            Op::Eq => actual == expected,
            Op::Ne => actual != expected,
            Op::StartsWith => actual.starts_with(expected),
            Op::EndsWith => actual.ends_with(expected),
            Op::Contains => actual.contains(expected),
        }
    }

    /// The operator as written in a filter.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::StartsWith => "^=",
            Op::EndsWith => "$=",
            Op::Contains => "*=",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One comparison `<attr><op><value>`: a whole list filter, or a leaf of a
/// webhook filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// Dotted path of the attribute (`data.orderId`).
    pub attr: String,
    /// How the attribute's value is compared with `value`.
    pub op: Op,
    /// The expected value, unquoted and unescaped.
    pub value: String,
}

impl Condition {
    /// Parses one list-filter condition. The whole input must be consumed, so
    /// `name=John Doe` is an error: a value with spaces must be quoted, exactly
    /// as in a webhook filter.
    pub fn parse(s: &str) -> Result<Condition, ParseError> {
        let mut parser = Parser::new(s);
        parser.skip_ws();
        if parser.at_end() {
            return Err(ParseError::new(0, "empty filter"));
        }
        let condition = parser.condition("expected an attribute")?;
        parser.finish()?;
        Ok(condition)
    }

    /// Whether an attribute whose value is `actual` (`None`: the attribute is
    /// missing) satisfies the condition. A missing attribute matches only `!=`:
    /// it equals, starts, ends or contains nothing, and it differs from every
    /// value — so `x!=a` and `not x=a` agree on objects without `x`.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        match actual {
            Some(actual) => self.op.apply(actual, &self.value),
            None => self.op == Op::Ne,
        }
    }
}

impl FromStr for Condition {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Condition::parse(s)
    }
}

/// Prints the canonical form `attr<op>value`, quoting the value only when a
/// bare one would not parse back to the same string (empty, whitespace,
/// brackets, quotes, or a keyword). The attribute is printed as is: one built
/// by hand with characters outside the grammar will not parse back.
impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.attr)?;
        f.write_str(self.op.as_str())?;
        if !needs_quotes(&self.value) {
            return f.write_str(&self.value);
        }
        f.write_str("\"")?;
        for c in self.value.chars() {
            if c == '"' || c == '\\' {
                f.write_str("\\")?;
            }
            write!(f, "{c}")?;
        }
        f.write_str("\"")
    }
}

/// A webhook filter: conditions joined by `and`, `or` and `not`. The tree keeps
/// the shape the filter was written with, so that printing it shows the user
/// what they wrote, brackets included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// One comparison, a leaf of the tree.
    Cond(Condition),
    /// Matches when both sides match.
    And(Box<Expr>, Box<Expr>),
    /// Matches when either side matches.
    Or(Box<Expr>, Box<Expr>),
    /// Matches when the inner filter does not.
    Not(Box<Expr>),
}

impl Expr {
    /// Parses a webhook filter, e.g.
    /// `type=domain and (event=TMS_RESULT_AVAILABLE or event^=CLIENT_)`.
    pub fn parse(s: &str) -> Result<Expr, ParseError> {
        let mut parser = Parser::new(s);
        parser.skip_ws();
        if parser.at_end() {
            return Err(ParseError::new(0, "empty filter"));
        }
        let expr = parser.or_expr()?;
        parser.finish()?;
        Ok(expr)
    }

    /// Evaluates the filter, asking `lookup` for each attribute's value
    /// (`None`: missing; see [`Condition::matches`]). `and` and `or` stop at
    /// the first operand that decides them. The lookup is a function rather
    /// than a map so callers can filter any shape of object without copying
    /// it; [`event_lookup`] serves webhook events.
    pub fn matches(&self, lookup: &dyn Fn(&str) -> Option<String>) -> bool {
        match self {
            Expr::Cond(c) => c.matches(lookup(&c.attr).as_deref()),
            Expr::And(l, r) => l.matches(lookup) && r.matches(lookup),
            Expr::Or(l, r) => l.matches(lookup) || r.matches(lookup),
            Expr::Not(e) => !e.matches(lookup),
        }
    }

    /// The attributes the filter names, each once, in order of first
    /// appearance, so callers can reject unknown ones (`UnknownProperty`)
    /// when the filter is stored rather than silently never matching.
    pub fn attributes(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_attributes(&mut out);
        out
    }

    fn collect_attributes<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Cond(c) => {
                if !out.contains(&c.attr.as_str()) {
                    out.push(&c.attr);
                }
            }
            Expr::And(l, r) | Expr::Or(l, r) => {
                l.collect_attributes(out);
                r.collect_attributes(out);
            }
            Expr::Not(e) => e.collect_attributes(out),
        }
    }

    /// Binding strength: what a parent needs of a child to print it without
    /// brackets.
    fn precedence(&self) -> u8 {
        match self {
            Expr::Or(..) => 1,
            Expr::And(..) => 2,
            Expr::Not(_) => 3,
            Expr::Cond(_) => 4,
        }
    }

    /// Prints `self` as an operand that must bind at least as tightly as
    /// `min`, bracketing it otherwise.
    fn fmt_operand(&self, f: &mut fmt::Formatter<'_>, min: u8) -> fmt::Result {
        if self.precedence() < min {
            f.write_str("(")?;
            self.fmt_operand(f, 0)?;
            return f.write_str(")");
        }
        match self {
            Expr::Cond(c) => fmt::Display::fmt(c, f),
            // Left-associative: a left operand of the same kind needs no
            // brackets, a right one does, or it would parse back as a left one.
            Expr::And(l, r) => {
                l.fmt_operand(f, 2)?;
                f.write_str(" and ")?;
                r.fmt_operand(f, 3)
            }
            Expr::Or(l, r) => {
                l.fmt_operand(f, 1)?;
                f.write_str(" or ")?;
                r.fmt_operand(f, 2)
            }
            Expr::Not(e) => {
                f.write_str("not ")?;
                e.fmt_operand(f, 3)
            }
        }
    }
}

impl FromStr for Expr {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Expr::parse(s)
    }
}

/// Prints the canonical form: single spaces around lower-case keywords and
/// only the brackets that the tree's shape needs, so that
/// `Expr::parse(&e.to_string()) == Ok(e)` for every tree the parser can
/// produce. Stored filters can be shown back to users in this form.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_operand(f, 0)
    }
}

/// Why a filter did not parse. Displays as the API's `ParsingError: ...`
/// message, naming where the problem is and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("ParsingError: {message} at position {position}")]
pub struct ParseError {
    /// 0-based offset in characters (not bytes), as a user counts them.
    pub position: usize,
    /// What is wrong there, e.g. what was expected instead.
    pub message: String,
}

impl ParseError {
    fn new(position: usize, message: impl Into<String>) -> ParseError {
        ParseError { position, message: message.into() }
    }
}

/// Looks up a filter attribute in a webhook event
/// (`{ id, tenantId, type, event, timestamp, data }`): `type`, `event`,
/// `tenantId`, `id`, and `data.<path>` with dots descending into objects and
/// decimal indices into arrays (`data.items.0.sku`).
///
/// Strings are returned as they are, numbers and booleans as their JSON text
/// (`42`, `1.5`, `true`), so filters compare the text a user sees. `null`, a
/// missing field, and any other attribute (`timestamp`, bare `data`) are
/// `None`, i.e. missing. Objects and arrays are returned as their compact JSON
/// text rather than `None`, so `data.tags*="urgent"` can probe an array
/// without a dedicated operator.
pub fn event_lookup(event: &Value) -> impl Fn(&str) -> Option<String> + '_ {
    move |attr: &str| {
        let found = if is_envelope_attribute(attr) {
            event.get(attr)?
        } else {
            let path = attr.strip_prefix("data.")?;
            let mut current = event.get("data")?;
            for segment in path.split('.') {
                current = match current {
                    Value::Object(map) => map.get(segment)?,
                    Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
                    _ => return None,
                };
            }
            current
        };
        match found {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Number(n) => Some(n.to_string()),
            Value::Array(_) | Value::Object(_) => Some(found.to_string()),
        }
    }
}

/// Whether `attr` is one that [`event_lookup`] can answer, for callers that
/// validate a webhook filter's [`Expr::attributes`] when it is stored.
pub fn is_event_attribute(attr: &str) -> bool {
    is_envelope_attribute(attr)
        || attr
            .strip_prefix("data.")
            .is_some_and(|path| path.split('.').all(|s| !s.is_empty() && s.chars().all(is_name_char)))
}

fn is_envelope_attribute(attr: &str) -> bool {
    matches!(attr, "type" | "event" | "tenantId" | "id")
}

fn is_keyword(word: &str) -> bool {
    KEYWORDS.iter().any(|k| word.eq_ignore_ascii_case(k))
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Characters of a word: an attribute, or a keyword, which is read the same
/// way so that `nota` and `not.x` are attributes, not `not` and a remainder.
fn is_word_char(c: char) -> bool {
    is_name_char(c) || c == '.'
}

fn is_bare_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '(' | ')' | '"')
}

/// Whether a value must be quoted to parse back to itself; exactly the
/// complement of what a bare value accepts.
fn needs_quotes(value: &str) -> bool {
    value.is_empty() || !value.chars().all(is_bare_char) || is_keyword(value)
}

/// A recursive-descent parser over characters, so that error positions are
/// character offsets and slicing can never split a UTF-8 sequence.
struct Parser {
    chars: Vec<char>,
    pos: usize,
    /// Brackets and `not`s currently open.
    nesting: usize,
    conditions: usize,
}

impl Parser {
    fn new(s: &str) -> Parser {
        Parser { chars: s.chars().collect(), pos: 0, nesting: 0, conditions: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_next(&self) -> Option<char> {
        self.chars.get(self.pos..)?.get(1).copied()
    }

    /// Moves past `n` characters the caller has just peeked.
    // `pos` only moves over characters seen by `peek`/`peek_next`, so it stays
    // within `chars.len()` and `pos + n` (n ≤ 2) cannot overflow.
    #[allow(clippy::arithmetic_side_effects)]
    fn advance(&mut self, n: usize) {
        self.pos += n;
    }

    fn at_end(&self) -> bool {
        self.pos >= self.chars.len()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.advance(1);
        }
    }

    fn end_of_run(&self, accept: fn(char) -> bool) -> usize {
        let run = self.chars.get(self.pos..).unwrap_or_default().iter().take_while(|c| accept(**c)).count();
        // The run lies within `chars`, so its end is at most `chars.len()`.
        #[allow(clippy::arithmetic_side_effects)]
        let end = self.pos + run;
        end
    }

    fn text(&self, end: usize) -> String {
        self.chars[self.pos..end].iter().collect()
    }

    /// Consumes `keyword` (after any whitespace) if the next word is it.
    fn eat_keyword(&mut self, keyword: &str) -> bool {
        self.skip_ws();
        let end = self.end_of_run(is_word_char);
        if self.text(end).eq_ignore_ascii_case(keyword) {
            self.pos = end;
            true
        } else {
            false
        }
    }

    fn enter(&mut self, at: usize) -> Result<(), ParseError> {
        self.nesting = self.nesting.saturating_add(1);
        if self.nesting > MAX_NESTING {
            return Err(ParseError::new(at, format!("too deeply nested (at most {MAX_NESTING} brackets and nots)")));
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), ParseError> {
        self.skip_ws();
        if self.at_end() {
            Ok(())
        } else {
            Err(ParseError::new(self.pos, "unexpected input after the expression"))
        }
    }

    fn or_expr(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.and_expr()?;
        while self.eat_keyword("or") {
            let right = self.and_expr()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and_expr(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.unary()?;
        while self.eat_keyword("and") {
            let right = self.unary()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        self.skip_ws();
        let at = self.pos;
        if self.eat_keyword("not") {
            self.enter(at)?;
            let inner = self.unary()?;
            self.nesting = self.nesting.saturating_sub(1);
            return Ok(Expr::Not(Box::new(inner)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        self.skip_ws();
        if self.peek() != Some('(') {
            return Ok(Expr::Cond(self.condition("expected an attribute or '('")?));
        }
        let open = self.pos;
        self.enter(open)?;
        self.advance(1);
        let inner = self.or_expr()?;
        self.skip_ws();
        match self.peek() {
            Some(')') => {
                self.advance(1);
                self.nesting = self.nesting.saturating_sub(1);
                Ok(inner)
            }
            // Blame the bracket: the end of input says nothing about which
            // bracket was left open.
            None => Err(ParseError::new(open, "unclosed bracket")),
            Some(_) => Err(ParseError::new(
                self.pos,
                format!("expected 'and', 'or' or ')' closing the bracket at position {open}"),
            )),
        }
    }

    /// `expected` names what may stand here, for the error when nothing does.
    fn condition(&mut self, expected: &str) -> Result<Condition, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let attr = self.attribute(expected)?;
        self.conditions = self.conditions.saturating_add(1);
        if self.conditions > MAX_CONDITIONS {
            return Err(ParseError::new(start, format!("too many conditions (at most {MAX_CONDITIONS})")));
        }
        self.skip_ws();
        let op = self.op()?;
        self.skip_ws();
        let value = self.value()?;
        Ok(Condition { attr, op, value })
    }

    fn attribute(&mut self, expected: &str) -> Result<String, ParseError> {
        let start = self.pos;
        let end = self.end_of_run(is_word_char);
        if end == start {
            return Err(ParseError::new(start, expected));
        }
        let word = self.text(end);
        if is_keyword(&word) {
            return Err(ParseError::new(start, format!("{expected}, found the keyword '{word}'")));
        }
        let mut segment_start = start;
        for (i, &c) in self.chars.iter().enumerate().take(end).skip(start) {
            if c == '.' {
                if i == segment_start {
                    return Err(ParseError::new(segment_start, "expected a name between the dots of an attribute"));
                }
                // `i` indexes `chars`, so `i + 1 <= chars.len()`.
                #[allow(clippy::arithmetic_side_effects)]
                let next = i + 1;
                segment_start = next;
            }
        }
        if segment_start == end {
            return Err(ParseError::new(end, "expected a name between the dots of an attribute"));
        }
        self.pos = end;
        Ok(word)
    }

    fn op(&mut self) -> Result<Op, ParseError> {
        let (op, len) = match (self.peek(), self.peek_next()) {
            (Some('='), _) => (Op::Eq, 1),
            (Some('!'), Some('=')) => (Op::Ne, 2),
            (Some('^'), Some('=')) => (Op::StartsWith, 2),
            (Some('$'), Some('=')) => (Op::EndsWith, 2),
            (Some('*'), Some('=')) => (Op::Contains, 2),
            _ => return Err(ParseError::new(self.pos, "expected an operator (=, !=, ^=, $=, *=)")),
        };
        self.advance(len);
        Ok(op)
    }

    fn value(&mut self) -> Result<String, ParseError> {
        match self.peek() {
            Some('"') => self.quoted(),
            Some(c) if is_bare_char(c) => {
                let end = self.end_of_run(is_bare_char);
                let value = self.text(end);
                if is_keyword(&value) {
                    return Err(ParseError::new(
                        self.pos,
                        "a bare value may not be a keyword (and, or, not); quote it",
                    ));
                }
                self.pos = end;
                Ok(value)
            }
            _ => Err(ParseError::new(self.pos, "expected a value (bare or \"quoted\")")),
        }
    }

    fn quoted(&mut self) -> Result<String, ParseError> {
        let open = self.pos;
        self.advance(1);
        let mut value = String::new();
        loop {
            match self.peek() {
                None => return Err(ParseError::new(open, "unterminated quoted value")),
                Some('"') => {
                    self.advance(1);
                    return Ok(value);
                }
                Some('\\') => match self.peek_next() {
                    Some(c @ ('"' | '\\')) => {
                        value.push(c);
                        self.advance(2);
                    }
                    None => return Err(ParseError::new(open, "unterminated quoted value")),
                    Some(_) => {
                        return Err(ParseError::new(
                            self.pos,
                            r#"invalid escape in a quoted value (only \" and \\ are allowed)"#,
                        ))
                    }
                },
                Some(c) => {
                    value.push(c);
                    self.advance(1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn cond(attr: &str, op: Op, value: &str) -> Expr {
        Expr::Cond(Condition { attr: attr.into(), op, value: value.into() })
    }
    fn eq(attr: &str, value: &str) -> Expr {
        cond(attr, Op::Eq, value)
    }
    fn and(l: Expr, r: Expr) -> Expr {
        Expr::And(Box::new(l), Box::new(r))
    }
    fn or(l: Expr, r: Expr) -> Expr {
        Expr::Or(Box::new(l), Box::new(r))
    }
    fn not(e: Expr) -> Expr {
        Expr::Not(Box::new(e))
    }
    fn parse(s: &str) -> Expr {
        match Expr::parse(s) {
            Ok(e) => e,
            Err(e) => panic!("{s:?} did not parse: {e}"),
        }
    }
    fn err(s: &str) -> ParseError {
        match Expr::parse(s) {
            Ok(e) => panic!("{s:?} parsed as {e:?}"),
            Err(e) => e,
        }
    }
    /// Asserts the error's position and that its message contains `needle`.
    fn assert_err(s: &str, position: usize, needle: &str) {
        let e = err(s);
        assert_eq!(e.position, position, "{s:?}: {e}");
        assert!(e.message.contains(needle), "{s:?}: {e}");
    }
    fn map(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |attr: &str| pairs.iter().find(|(k, _)| k == attr).map(|(_, v)| v.clone())
    }

    #[test]
    fn filter_each_operator_applies() {
        assert!(Op::Eq.apply("abc", "abc"));
        assert!(!Op::Eq.apply("abc", "ABC"));
        assert!(Op::Ne.apply("abc", "abd"));
        assert!(!Op::Ne.apply("abc", "abc"));
        assert!(Op::StartsWith.apply("CLIENT_ADDED", "CLIENT_"));
        assert!(!Op::StartsWith.apply("TMS_CLIENT_", "CLIENT_"));
        assert!(Op::EndsWith.apply("order.pdf", ".pdf"));
        assert!(!Op::EndsWith.apply("order.pdf.gz", ".pdf"));
        assert!(Op::Contains.apply("in progress", "prog"));
        assert!(!Op::Contains.apply("in progress", "done"));
        assert!(Op::Contains.apply("anything", ""));
    }

    #[test]
    fn filter_each_operator_parses() {
        let cases = [
            ("a=x", Op::Eq),
            ("a!=x", Op::Ne),
            ("a^=x", Op::StartsWith),
            ("a$=x", Op::EndsWith),
            ("a*=x", Op::Contains),
        ];
        for (s, op) in cases {
            assert_eq!(Condition::parse(s), Ok(Condition { attr: "a".into(), op, value: "x".into() }));
            assert_eq!(parse(s), cond("a", op, "x"));
            assert_eq!(op.as_str(), &s[1..s.len() - 1]);
            assert_eq!(op.to_string(), op.as_str());
        }
        // The operator is read first, so the value may start with '='.
        assert_eq!(parse("a==x"), eq("a", "=x"));
        assert_eq!(parse("a!==x"), cond("a", Op::Ne, "=x"));
    }

    #[test]
    fn filter_whitespace_around_operators_is_optional() {
        for s in ["type=domain", "type = domain", "  type =domain\t", "type=\n domain"] {
            assert_eq!(parse(s), eq("type", "domain"), "{s:?}");
            assert_eq!(Condition::parse(s).map(Expr::Cond), Ok(eq("type", "domain")), "{s:?}");
        }
        assert_eq!(parse("(a=1)and(b=2)"), and(eq("a", "1"), eq("b", "2")));
        assert_eq!(parse("not(a=1)"), not(eq("a", "1")));
        assert_eq!(parse("a=\"1\"or b=2"), or(eq("a", "1"), eq("b", "2")));
    }

    #[test]
    fn filter_precedence_not_over_and_over_or() {
        assert_eq!(parse("a=1 or b=2 and c=3"), or(eq("a", "1"), and(eq("b", "2"), eq("c", "3"))));
        assert_eq!(parse("a=1 and b=2 or c=3"), or(and(eq("a", "1"), eq("b", "2")), eq("c", "3")));
        assert_eq!(parse("not a=1 and b=2"), and(not(eq("a", "1")), eq("b", "2")));
        assert_eq!(parse("a=1 or not b=2"), or(eq("a", "1"), not(eq("b", "2"))));
        // Chains are left-associative.
        assert_eq!(parse("a=1 or b=2 or c=3"), or(or(eq("a", "1"), eq("b", "2")), eq("c", "3")));
        assert_eq!(parse("a=1 and b=2 and c=3"), and(and(eq("a", "1"), eq("b", "2")), eq("c", "3")));
    }

    #[test]
    fn filter_not_and_nested_brackets() {
        assert_eq!(parse("not not a=1"), not(not(eq("a", "1"))));
        assert_eq!(parse("not (a=1 or b=2)"), not(or(eq("a", "1"), eq("b", "2"))));
        assert_eq!(
            parse("((a=1 or (b=2)) and not (c=3 or (d=4 and e=5)))"),
            and(or(eq("a", "1"), eq("b", "2")), not(or(eq("c", "3"), and(eq("d", "4"), eq("e", "5")))))
        );
        assert_eq!(parse("a=1 and (b=2 and c=3)"), and(eq("a", "1"), and(eq("b", "2"), eq("c", "3"))));
        // Words that merely start with a keyword are attributes.
        assert_eq!(parse("nota=1"), eq("nota", "1"));
        assert_eq!(parse("not.x=1 or order=2"), or(eq("not.x", "1"), eq("order", "2")));
        assert_eq!(parse("android-id=1"), eq("android-id", "1"));
    }

    #[test]
    fn filter_api_examples() {
        assert_eq!(
            parse("type=domain and (event=TMS_RESULT_AVAILABLE or event^=CLIENT_)"),
            and(
                eq("type", "domain"),
                or(eq("event", "TMS_RESULT_AVAILABLE"), cond("event", Op::StartsWith, "CLIENT_"))
            )
        );
        assert_eq!(parse("not data.status=\"in progress\""), not(eq("data.status", "in progress")));
    }

    #[test]
    fn filter_quoted_values() {
        assert_eq!(parse(r#"a="in progress""#), eq("a", "in progress"));
        assert_eq!(parse(r#"a="say \"hi\" \\ there""#), eq("a", r#"say "hi" \ there"#));
        assert_eq!(parse(r#"a="and" or b="NOT""#), or(eq("a", "and"), eq("b", "NOT")));
        assert_eq!(parse(r#"a="(x)""#), eq("a", "(x)"));
        assert_eq!(parse(r#"a="""#), eq("a", ""));
        assert_eq!(parse(r#"a="日本 語""#), eq("a", "日本 語"));
        assert_eq!(parse("a=\"line\nbreak\""), eq("a", "line\nbreak"));
        // Bare values take backslashes and operator characters literally.
        assert_eq!(parse(r"a=C:\dir*=x!"), eq("a", r"C:\dir*=x!"));
        assert_eq!(parse("a=android"), eq("a", "android"));
    }

    #[test]
    fn filter_keywords_are_case_insensitive() {
        let expected = or(and(eq("a", "1"), eq("b", "2")), not(eq("c", "3")));
        for s in ["a=1 and b=2 or not c=3", "a=1 AnD b=2 oR NOT c=3", "a=1 AND b=2 OR Not c=3"] {
            assert_eq!(parse(s), expected, "{s:?}");
        }
        // Bare values may not be keywords in any case.
        assert_err("a=AND", 2, "quote it");
    }

    #[test]
    fn filter_errors_name_position_and_expectation() {
        assert_err("", 0, "empty filter");
        assert_err("   \t", 0, "empty filter");
        assert_err("type domain", 5, "expected an operator (=, !=, ^=, $=, *=)");
        assert_err("type", 4, "expected an operator (=, !=, ^=, $=, *=)");
        assert_err("a<1", 1, "expected an operator");
        assert_err("a!1", 1, "expected an operator");
        assert_err("(a=1 and (b=2)", 0, "unclosed bracket");
        assert_err("a=1 and (b=2 or (c=3)", 8, "unclosed bracket");
        assert_err("(a=1 b=2)", 5, "expected 'and', 'or' or ')' closing the bracket at position 0");
        assert_err(r#"a="abc"#, 2, "unterminated quoted value");
        assert_err(r#"a=1 or b="x\"#, 9, "unterminated quoted value");
        assert_err(r#"a="x\n""#, 4, "invalid escape");
        assert_err("a=1 b=2", 4, "unexpected input after the expression");
        assert_err("a=1)", 3, "unexpected input after the expression");
        assert_err("a=1 andb=2", 4, "unexpected input after the expression");
        assert_err("a=x\"y\"", 3, "unexpected input after the expression");
        assert_err("a=", 2, "expected a value");
        assert_err("a= )", 3, "expected a value");
        assert_err("a=and", 2, "a bare value may not be a keyword");
        assert_err("a=1 and not", 11, "expected an attribute or '('");
        assert_err("=1", 0, "expected an attribute or '('");
        assert_err("a=1 and", 7, "expected an attribute or '('");
        assert_err("()", 1, "expected an attribute or '('");
        assert_err("a=1 or or b=2", 7, "found the keyword 'or'");
        assert_err("a..b=1", 2, "expected a name between the dots");
        assert_err(".a=1", 0, "expected a name between the dots");
        assert_err("a.=1", 2, "expected a name between the dots");
        assert_eq!(err("(a=1").to_string(), "ParsingError: unclosed bracket at position 0");
    }

    #[test]
    fn filter_error_positions_count_characters_not_bytes() {
        assert_err("a=\"日本\" x", 7, "unexpected input");
        assert_err("é日=1 ü", 5, "unexpected input");
    }

    #[test]
    fn filter_nesting_and_size_are_bounded() {
        let ok = format!("{}a=1{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert_eq!(Expr::parse(&ok), Ok(eq("a", "1")));
        let deep = format!("{}a=1{}", "(".repeat(MAX_NESTING + 1), ")".repeat(MAX_NESTING + 1));
        assert_err(&deep, MAX_NESTING, "too deeply nested");
        assert_err(&"not ".repeat(100_000), 4 * MAX_NESTING, "too deeply nested");
        assert_err(&"(".repeat(100_000), MAX_NESTING, "too deeply nested");

        let chain = vec!["a=1"; MAX_CONDITIONS].join(" or ");
        let e = parse(&chain);
        assert!(e.matches(&map(&[("a", "1")])));
        assert_eq!(Expr::parse(&e.to_string()), Ok(e));
        let long = vec!["a=1"; 100_000].join(" or ");
        assert_err(&long, 7 * MAX_CONDITIONS, "too many conditions");
    }

    #[test]
    fn filter_condition_parse_is_a_whole_list_filter() {
        assert_eq!(
            Condition::parse(" name = \"John Doe\" "),
            Ok(Condition { attr: "name".into(), op: Op::Eq, value: "John Doe".into() })
        );
        assert_eq!("name^=Jo".parse::<Condition>().map(|c| c.op), Ok(Op::StartsWith));
        let e = |s: &str| match Condition::parse(s) {
            Ok(c) => panic!("{s:?} parsed as {c:?}"),
            Err(e) => e,
        };
        assert_eq!(e("name=John Doe").position, 10);
        assert_eq!(e("name=John Doe").message, "unexpected input after the expression");
        assert_eq!(e("a=1 and b=2").position, 4);
        assert_eq!(e("(a=1)").message, "expected an attribute");
        assert_eq!(e("and=1").message, "expected an attribute, found the keyword 'and'");
        assert_eq!(e("").message, "empty filter");
        assert_eq!(e("name").message, "expected an operator (=, !=, ^=, $=, *=)");
    }

    #[test]
    fn filter_matches_missing_attributes_only_with_not_equal() {
        let missing = |_: &str| -> Option<String> { None };
        assert!(!parse("x=1").matches(&missing));
        assert!(parse("x!=1").matches(&missing));
        assert!(!parse("x^=\"\"").matches(&missing));
        assert!(!parse("x$=a").matches(&missing));
        assert!(!parse("x*=\"\"").matches(&missing));
        assert!(parse("not x=1").matches(&missing));
        assert!(Condition::parse("x!=1").is_ok_and(|c| c.matches(None)));
        assert!(Condition::parse("x=1").is_ok_and(|c| !c.matches(None)));
    }

    #[test]
    fn filter_matches_evaluates_the_tree() {
        let f = parse("type=domain and (event=TMS_RESULT_AVAILABLE or event^=CLIENT_)");
        assert!(f.matches(&map(&[("type", "domain"), ("event", "TMS_RESULT_AVAILABLE")])));
        assert!(f.matches(&map(&[("type", "domain"), ("event", "CLIENT_ADDED")])));
        assert!(!f.matches(&map(&[("type", "domain"), ("event", "OTHER")])));
        assert!(!f.matches(&map(&[("type", "push"), ("event", "CLIENT_ADDED")])));
        let g = parse("not data.status=\"in progress\"");
        assert!(!g.matches(&map(&[("data.status", "in progress")])));
        assert!(g.matches(&map(&[("data.status", "done")])));
    }

    #[test]
    fn filter_attributes_are_listed_once_in_order() {
        let f = parse("b=1 and (a=2 or not b=3) or data.x.y=4");
        assert_eq!(f.attributes(), vec!["b", "a", "data.x.y"]);
    }

    #[test]
    fn filter_event_lookup_reads_envelope_and_nested_data() {
        let event = json!({
            "id": "01HZX", "tenantId": "acme", "type": "domain", "event": "TMS_RESULT_AVAILABLE",
            "timestamp": "2024-01-01T00:00:00Z",
            "data": {
                "orderId": "o-1", "count": 42, "ratio": 1.5, "ok": true, "none": null,
                "order": { "customer": { "name": "Zoë" } },
                "items": [{ "sku": "A" }, { "sku": "B" }],
                "tags": ["urgent", "vip"]
            }
        });
        let lookup = event_lookup(&event);
        assert_eq!(lookup("type").as_deref(), Some("domain"));
        assert_eq!(lookup("event").as_deref(), Some("TMS_RESULT_AVAILABLE"));
        assert_eq!(lookup("tenantId").as_deref(), Some("acme"));
        assert_eq!(lookup("id").as_deref(), Some("01HZX"));
        assert_eq!(lookup("data.orderId").as_deref(), Some("o-1"));
        assert_eq!(lookup("data.count").as_deref(), Some("42"));
        assert_eq!(lookup("data.ratio").as_deref(), Some("1.5"));
        assert_eq!(lookup("data.ok").as_deref(), Some("true"));
        assert_eq!(lookup("data.none"), None);
        assert_eq!(lookup("data.order.customer.name").as_deref(), Some("Zoë"));
        assert_eq!(lookup("data.items.1.sku").as_deref(), Some("B"));
        assert_eq!(lookup("data.items.2.sku"), None);
        assert_eq!(lookup("data.items.x"), None);
        assert_eq!(lookup("data.orderId.deeper"), None);
        assert_eq!(lookup("data.tags").as_deref(), Some(r#"["urgent","vip"]"#));
        assert_eq!(lookup("data.order.customer").as_deref(), Some(r#"{"name":"Zoë"}"#));
        assert_eq!(lookup("data.missing"), None);
        assert_eq!(lookup("timestamp"), None);
        assert_eq!(lookup("data"), None);
        assert_eq!(lookup("nope"), None);

        assert!(parse("data.order.customer.name$=ë and data.count=42").matches(&lookup));
        assert!(parse("data.tags*=\"\\\"urgent\\\"\"").matches(&lookup));
        assert!(parse("data.none!=x and not data.none=x").matches(&lookup));
        assert_eq!(event_lookup(&json!("not an object"))("type"), None);
    }

    #[test]
    fn filter_is_event_attribute() {
        for a in ["type", "event", "tenantId", "id", "data.orderId", "data.items.0.sku"] {
            assert!(is_event_attribute(a), "{a}");
        }
        for a in ["timestamp", "data", "data.", "data..x", "tenantid", "foo.bar"] {
            assert!(!is_event_attribute(a), "{a}");
        }
    }

    #[test]
    fn filter_display_is_canonical() {
        let cases = [
            ("a=1  OR b=2 AND c=3", "a=1 or b=2 and c=3"),
            ("(a=1 or b=2) and c=3", "(a=1 or b=2) and c=3"),
            ("a=1 and (b=2 and c=3)", "a=1 and (b=2 and c=3)"),
            ("((a=1 and b=2)) and c=3", "a=1 and b=2 and c=3"),
            ("a=1 or (b=2 or c=3)", "a=1 or (b=2 or c=3)"),
            ("NOT(a=1)", "not a=1"),
            ("not (a=1 and b=2)", "not (a=1 and b=2)"),
            ("not not a = 1", "not not a=1"),
            (r#"a="x" and b="in progress""#, r#"a=x and b="in progress""#),
            (r#"a="and" or b="" or c="q\"\\" or d="(""#, r#"a="and" or b="" or c="q\"\\" or d="(""#),
        ];
        for (input, printed) in cases {
            assert_eq!(parse(input).to_string(), printed, "{input:?}");
        }
        let c = Condition { attr: "x".into(), op: Op::Contains, value: "a b".into() };
        assert_eq!(c.to_string(), r#"x*="a b""#);
    }

    fn attr_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec("[A-Za-z0-9_éß日-]{1,6}", 1..=3)
            .prop_map(|segments| segments.join("."))
            .prop_filter("keywords are not attributes", |a| !is_keyword(a))
    }

    fn op_strategy() -> impl Strategy<Value = Op> {
        prop::sample::select(vec![Op::Eq, Op::Ne, Op::StartsWith, Op::EndsWith, Op::Contains])
    }

    fn value_strategy() -> impl Strategy<Value = String> {
        let special = vec![
            ' ', '\t', '\n', '\u{a0}', '\u{3000}', '"', '\\', '(', ')', '=', '!', '^', '$', '*', '.', 'a', 'n', 'd',
            'o', 'r', 't', 'N', 'é', '日', '🦀',
        ];
        let ch = prop_oneof![any::<char>(), prop::sample::select(special)];
        prop_oneof![
            1 => prop::sample::select(vec!["and", "OR", "Not", "", "(", ")", "\\", "\"", "a b", "=", "!=", "\\\""])
                .prop_map(String::from),
            4 => prop::collection::vec(ch, 0..12).prop_map(|chars| chars.into_iter().collect()),
        ]
    }

    fn condition_strategy() -> impl Strategy<Value = Condition> {
        (attr_strategy(), op_strategy(), value_strategy()).prop_map(|(attr, op, value)| Condition { attr, op, value })
    }

    fn expr_strategy() -> impl Strategy<Value = Expr> {
        condition_strategy().prop_map(Expr::Cond).prop_recursive(5, 48, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(l, r)| and(l, r)),
                (inner.clone(), inner.clone()).prop_map(|(l, r)| or(l, r)),
                inner.prop_map(not),
            ]
        })
    }

    /// Strings made of the grammar's own pieces, which reach far more of the
    /// parser than uniformly random text.
    fn soup_strategy() -> impl Strategy<Value = String> {
        let pieces = vec![
            "a", "b.c", "x", "=", "!=", "^=", "$=", "*=", "!", "and", "OR", "not", "(", ")", "\"", "\\", " ",
            "\"q r\"", "1", ".", "é", "\t",
        ];
        prop::collection::vec(prop::sample::select(pieces), 0..24).prop_map(|p| p.concat())
    }

    proptest! {
        #[test]
        fn filter_prop_expr_print_parse_round_trips(expr in expr_strategy()) {
            let printed = expr.to_string();
            prop_assert_eq!(Expr::parse(&printed), Ok(expr), "printed as {:?}", printed);
        }

        #[test]
        fn filter_prop_condition_print_parse_round_trips(c in condition_strategy()) {
            let printed = c.to_string();
            prop_assert_eq!(Condition::parse(&printed), Ok(c.clone()), "printed as {:?}", printed);
            prop_assert_eq!(Expr::parse(&printed), Ok(Expr::Cond(c)), "printed as {:?}", printed);
        }

        #[test]
        fn filter_prop_arbitrary_strings_never_panic(s in any::<String>()) {
            let _ = Expr::parse(&s);
            let _ = Condition::parse(&s);
        }

        #[test]
        fn filter_prop_grammar_soup_never_panics_and_reprints(s in soup_strategy()) {
            let len = s.chars().count();
            match Expr::parse(&s) {
                Ok(e) => prop_assert_eq!(Expr::parse(&e.to_string()), Ok(e)),
                Err(e) => prop_assert!(e.position <= len, "{:?}: {}", s, e),
            }
            if let Ok(c) = Condition::parse(&s) {
                prop_assert_eq!(Condition::parse(&c.to_string()), Ok(c));
            }
        }
    }
}
