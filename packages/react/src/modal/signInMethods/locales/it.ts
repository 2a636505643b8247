import type { LinkingMessages } from '../en.js'

const it: LinkingMessages = {
  signInMethods: 'Metodi di accesso',
  loadingMethods: 'Caricamento dei metodi di accesso…',
  signInToManage: 'Accedi all’app per vedere e modificare i tuoi metodi di accesso.',
  kindEmail: 'Email',
  kindPasskey: 'Passkey',
  kindWallet: 'Wallet',
  kindOAuth: 'Account social',
  linkedOn: 'Collegato il {date}',
  remove: 'Rimuovi',
  removeMethod: 'Rimuovi {label}',
  onlyMethod: 'È il tuo unico modo per accedere. Aggiungine un altro prima di rimuoverlo.',
  addMethod: 'Aggiungi un metodo di accesso',
  emailToLink: 'Indirizzo email da aggiungere',
  sendCode: 'Invia codice',
  typeCodeInFrame: 'Digita nella finestra il codice inviato a {email}.',
  signInWalletToLink: 'Firma il messaggio in {name}',
  linking: 'Collegamento…',
  methodLinked: '{label} collegato. Ora puoi accedere con esso.',
  removing: 'Rimozione…',
  methodRemoved: '{label} rimosso.',
  secondFactor: 'Secondo fattore',
  mfaOff: 'Nessun secondo fattore configurato.',
  mfaOn: 'Un’app di autenticazione è configurata.',
  setUpTotp: 'Configura un’app di autenticazione',
  settingUpTotp: 'Configurazione dell’app di autenticazione…',
  totpEnrolled: 'App di autenticazione configurata. Conserva i codici di recupero in un posto sicuro.',
  methodsStatus: 'Stato dei metodi di accesso',
}

export default it
