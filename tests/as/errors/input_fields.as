import llm Fast from "openai://gpt-4.1-mini"

main agent A {
    model Fast

    main func(input {
        question string
        meta {
            lang string
        }
    }) {
        use input.questoin
        use input.meta.lnag
        use input.meta.lang
        return generate({ input: input.question }) {
            return {
                ok boolean
            }
        }
    }

    func loose(input) {
        return input.anything
    }
}
