import Foundation
import StrataDomain
import StrataJSON

// Errors shown as pop-ups.
extension BrowserViewModel {
    func show(_ error: any Error, title: String, hint: String = "Enter closes this.") {
        let e = PresentableError(error)
        let message = deps.wording.message(e)
        update { $0.popup = BrowserState.Popup(title: title, message: message, hint: hint) }
    }
}
