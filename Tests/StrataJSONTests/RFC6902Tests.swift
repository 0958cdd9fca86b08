import StrataJSON
import Testing

/// RFC 6902 Appendix A, example by example: the document, the patch, and the result or the error.
@Suite struct RFC6902AppendixTests {
    struct Example: CustomTestStringConvertible, Sendable {
        var name: String
        var doc: String
        var patch: String
        /// The expected document, or nil where the RFC says the patch is an error.
        var result: String?
        var testDescription: String { name }
    }

    static let examples: [Example] = [
        Example(
            name: "A.1 adding an object member", doc: #"{"foo":"bar"}"#, patch: #"[{"op":"add","path":"/baz","value":"qux"}]"#,
            result: #"{"baz":"qux","foo":"bar"}"#),
        Example(
            name: "A.2 adding an array element", doc: #"{"foo":["bar","baz"]}"#, patch: #"[{"op":"add","path":"/foo/1","value":"qux"}]"#,
            result: #"{"foo":["bar","qux","baz"]}"#),
        Example(
            name: "A.3 removing an object member", doc: #"{"baz":"qux","foo":"bar"}"#, patch: #"[{"op":"remove","path":"/baz"}]"#,
            result: #"{"foo":"bar"}"#),
        Example(
            name: "A.4 removing an array element", doc: #"{"foo":["bar","qux","baz"]}"#, patch: #"[{"op":"remove","path":"/foo/1"}]"#,
            result: #"{"foo":["bar","baz"]}"#),
        Example(
            name: "A.5 replacing a value", doc: #"{"baz":"qux","foo":"bar"}"#, patch: #"[{"op":"replace","path":"/baz","value":"boo"}]"#,
            result: #"{"baz":"boo","foo":"bar"}"#),
        Example(
            name: "A.6 moving a value", doc: #"{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}"#,
            patch: #"[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]"#,
            result: #"{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}"#),
        Example(
            name: "A.7 moving an array element", doc: #"{"foo":["all","grass","cows","eat"]}"#, patch: #"[{"op":"move","from":"/foo/1","path":"/foo/3"}]"#,
            result: #"{"foo":["all","cows","eat","grass"]}"#),
        Example(
            name: "A.8 testing a value: success", doc: #"{"baz":"qux","foo":["a",2,"c"]}"#,
            patch: #"[{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]"#,
            result: #"{"baz":"qux","foo":["a",2,"c"]}"#),
        Example(name: "A.9 testing a value: error", doc: #"{"baz":"qux"}"#, patch: #"[{"op":"test","path":"/baz","value":"bar"}]"#, result: nil),
        Example(
            name: "A.10 adding a nested member object", doc: #"{"foo":"bar"}"#, patch: #"[{"op":"add","path":"/child","value":{"grandchild":{}}}]"#,
            result: #"{"child":{"grandchild":{}},"foo":"bar"}"#),
        Example(
            name: "A.11 ignoring unrecognized elements", doc: #"{"foo":"bar"}"#, patch: #"[{"op":"add","path":"/baz","value":"qux","xyz":123}]"#,
            result: #"{"baz":"qux","foo":"bar"}"#),
        Example(name: "A.12 adding to a nonexistent target", doc: #"{"foo":"bar"}"#, patch: #"[{"op":"add","path":"/baz/bat","value":"qux"}]"#, result: nil),
        Example(name: "A.14 ~ escape ordering", doc: #"{"/":9,"~1":10}"#, patch: #"[{"op":"test","path":"/~01","value":10}]"#, result: #"{"/":9,"~1":10}"#),
        Example(name: "A.15 comparing strings and numbers", doc: #"{"/":9,"~1":10}"#, patch: #"[{"op":"test","path":"/~01","value":"10"}]"#, result: nil),
        Example(
            name: "A.16 adding an array value", doc: #"{"foo":["bar"]}"#, patch: #"[{"op":"add","path":"/foo/-","value":["abc","def"]}]"#,
            result: #"{"foo":["bar",["abc","def"]]}"#)
    ]

    @Test(arguments: examples)
    func appendixA(_ example: Example) throws {
        let doc = try JSONValue(parsing: example.doc), patch = try JSONValue(parsing: example.patch)
        if let expected = example.result {
            #expect(try doc.applying(patchDocument: patch) == JSONValue(parsing: expected))
        } else {
            #expect(throws: JSONPatchError.self) { try doc.applying(patchDocument: patch) }
        }
    }
}

@Suite struct JSONPatchErrorTests {
    static let doc = try! JSONValue(parsing: #"{"bar":[1,2,3],"a~b":{"c/d":1},"":{"":"empty"},"n":1.0,"o":{"x":1,"y":[1,2]}}"#)

    func failure(_ patch: String) throws -> JSONPatchError? {
        do {
            _ = try Self.doc.applying(patchDocument: try JSONValue(parsing: patch))
            return nil
        } catch let e as JSONPatchError { return e }
    }

    @Test(arguments: [
        (#"[{"op":"add","path":"/bar/-1","value":0}]"#, #"operation 1 of 1 (add /bar/-1): "-1" is not an index of the array at /bar: use 0…3 or -"#),
        (#"[{"op":"add","path":"/bar/01","value":0}]"#, #"operation 1 of 1 (add /bar/01): "01" is not an index of the array at /bar: use 0…3 or -"#),
        (#"[{"op":"add","path":"/bar/1e3","value":0}]"#, #"operation 1 of 1 (add /bar/1e3): "1e3" is not an index of the array at /bar: use 0…3 or -"#),
        (#"[{"op":"add","path":"/bar/+1","value":0}]"#, #"operation 1 of 1 (add /bar/+1): "+1" is not an index of the array at /bar: use 0…3 or -"#),
        (
            #"[{"op":"add","path":"/bar/4","value":0}]"#,
            #"operation 1 of 1 (add /bar/4): index 4 is past the end of the array at /bar (3 elements): use 0…3 or -"#
        ),
        (#"[{"op":"remove","path":"/bar/3"}]"#, #"operation 1 of 1 (remove /bar/3): index 3 is past the end of the array at /bar (3 elements): use 0…2"#),
        (
            #"[{"op":"replace","path":"/bar/99999999999999999999999","value":0}]"#,
            #"operation 1 of 1 (replace /bar/99999999999999999999999): index 99999999999999999999999 is past the end of the array at /bar (3 elements): use 0…2"#
        ),
        (
            #"[{"op":"remove","path":"/bar/-"}]"#,
            #"operation 1 of 1 (remove /bar/-): - names no element of the array at /bar (it means past the end; only add takes it)"#
        ),
        (
            #"[{"op":"test","path":"/n","value":1},{"op":"add","path":"x","value":0}]"#,
            #"operation 2 of 2 (add x): "x" is not a JSON Pointer: it must be empty or start with /, e.g. /labels/0/name"#
        ),
        (#"[{"op":"add","path":"/a~2b","value":0}]"#, #"operation 1 of 1 (add /a~2b): "/a~2b" has a ~ that is not ~0 (for ~) or ~1 (for /)"#),
        (#"[{"path":"/bar"}]"#, #"operation 1 of 1: it has no "op" member (add, remove, replace, move, copy or test)"#),
        (#"[{"op":"frobnicate","path":"/bar"}]"#, #"operation 1 of 1: "frobnicate" is not an op; RFC 6902 has add, remove, replace, move, copy and test"#),
        (#"[{"op":"add","path":"/x"}]"#, #"operation 1 of 1 (add /x): add needs a "value" member"#),
        (#"[{"op":"move","path":"/x"}]"#, #"operation 1 of 1 (move /x): move needs a "from" member"#),
        (#"[{"op":"remove"}]"#, #"operation 1 of 1 (remove): it has no "path" member"#),
        (#"[{"op":"move","from":"/o","path":"/o/y/0"}]"#, #"operation 1 of 1 (move /o/y/0): a value cannot be moved into itself (/o/y/0 is inside /o)"#),
        (#"[{"op":"add","path":"/n/x","value":0}]"#, #"operation 1 of 1 (add /n/x): /n is a number, so /n/x does not exist"#),
        (
            #"[{"op":"replace","path":"/nope","value":0}]"#,
            #"operation 1 of 1 (replace /nope): /nope does not exist (replace needs an existing value; add creates one)"#
        ),
        (#"[{"op":"test","path":"/n","value":2}]"#, #"operation 1 of 1 (test /n): found 1.0, expected 2"#),
        (#"{"op":"add"}"#, #"invalid patch: a JSON Patch is an array of operations, e.g. [{"op":"replace","path":"/price","value":10}]"#),
        (#"[3]"#, #"operation 1 of 1: an operation is a JSON object, not a number"#)
    ])
    func badOperationsAreNamed(_ patch: String, _ message: String) throws {
        let error = try #require(try failure(patch), "\(patch) applied")
        #expect(error.description == message)
    }

    @Test func aFailedTestIsItsOwnKind() throws {
        #expect(try failure(#"[{"op":"test","path":"/bar/0","value":2}]"#)?.kind == .testFailed)
        #expect(try failure(#"[{"op":"test","path":"/zz","value":2}]"#)?.kind == .testFailed)
        #expect(try failure(#"[{"op":"add","path":"/bar/9","value":2}]"#)?.kind == .invalid)
    }

    @Test(arguments: [
        #"[]"#,
        #"[{"op":"test","path":"/n","value":1}]"#,
        #"[{"op":"test","path":"/n","value":1e0},{"op":"test","path":"/n","value":10E-1},{"op":"test","path":"/n","value":1.000}]"#,
        #"[{"op":"test","path":"/o","value":{"y":[1,2],"x":1}}]"#,
        #"[{"op":"move","from":"/bar","path":"/bar"}]"#,
        #"[{"op":"copy","from":"/bar/0","path":"/bar/0"},{"op":"remove","path":"/bar/0"}]"#,
        #"[{"op":"replace","path":"/n","value":1.0}]"#
    ])
    func patchesThatChangeNothingApply(_ patch: String) throws {
        #expect(try Self.doc.applying(patchDocument: try JSONValue(parsing: patch)) == Self.doc)
    }

    @Test func escapesAndTheEmptyKey() throws {
        let patch = try JSONValue(
            parsing:
                #"[{"op":"replace","path":"/a~0b/c~1d","value":2},{"op":"replace","path":"//","value":"full"},{"op":"test","path":"/","value":{"":"full"}}]"#)
        let out = try Self.doc.applying(patchDocument: patch)
        #expect(out.value(atPointer: "/a~0b/c~1d") == .number("2"))
        #expect(out.value(atPointer: "//") == .string("full"))
    }

    @Test func theWholeDocumentCanBeReplacedButNotRemoved() throws {
        #expect(try Self.doc.applying(patchDocument: try JSONValue(parsing: #"[{"op":"replace","path":"","value":[1]}]"#)) == .array([.number("1")]))
        #expect(
            try failure(#"[{"op":"remove","path":""}]"#)?.description
                == #"operation 1 of 1 (remove ""): the whole document cannot be removed; replace it instead"#)
    }

    @Test func aFailingPatchChangesNothing() throws {
        let patch = try JSONValue(parsing: #"[{"op":"add","path":"/bar/0","value":0},{"op":"remove","path":"/bar/9"}]"#)
        var doc = Self.doc
        #expect(throws: JSONPatchError.self) { doc = try doc.applying(patchDocument: patch) }
        #expect(doc == Self.doc)
    }

    @Test(arguments: [
        ("1", "1.0", true), ("1", "1e0", true), ("0", "-0", true), ("0.0", "0e5", true), ("100", "1e2", true), ("12.5", "125e-1", true),
        ("1", "2", false), ("1", "10", false), ("0.1", "1", false), ("-1", "1", false), ("1e400", "10e399", true)
    ])
    func numbersCompareByValue(_ a: String, _ b: String, _ same: Bool) {
        #expect(JSONValue.number(a).isSameValue(as: .number(b)) == same)
    }
}
