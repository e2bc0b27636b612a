// Splits a goal into at most five concrete steps.
import llm Fast from "openai://gpt-4.1-mini"

main agent Planner {
    model Fast
    role "Planner"
    description "Break goals into small, verifiable steps."

    main func(input {
        goal string
    }) {
        use input.goal
        return generate({
            input: "Split the goal into at most five concrete steps."
            attempts: 2
        }) {
            return {
                steps list[string]
            }
        }
    }
}
