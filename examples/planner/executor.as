// Carries out one step of a goal and reports.
import llm Fast from "openai://gpt-4.1-mini"

main agent Executor {
    model Fast
    role "Executor"

    main func(input {
        goal string
        step string
    }) {
        use input.goal < 500
        use input.step
        return generate({
            input: "Carry out the step for the goal and report what you did."
            limit: 800
        }) {
            return {
                ok boolean
                report string
            }
        }
    }
}
