import llm Fast from "openai://gpt-4.1-mini"
import memory Notes from "file://./notes.jsonl"

main agent A {
    main func(input) {
        first = generate({ input: "no model yet" }) {
            return {
                ok boolean
            }
        }
        model Fast
        second = generate({ input: "now there is one" }) {
            return {
                ok boolean
            }
        }
        items = []
        items.add(1, 2)
        Notes.add()
        return helper(input)
    }

    func helper(input) {
        return generate({ input: "the caller's model does not reach here" }) {
            return {
                ok boolean
            }
        }
    }
}
